// Small blocking-with-deadline TCP helpers for the store (IPv4).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::dist::net {

using Clock = std::chrono::steady_clock;

// Owns a file descriptor; closes it on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Listens on host:port ("" = every interface, port 0 = any free port).
// Throws StoreError naming the address and the reason (e.g. port in use).
Socket listen_tcp(const std::string& host, std::uint16_t port);
std::uint16_t local_port(const Socket& socket);

// Connects, retrying while the peer is not up yet, until the deadline.
// Throws StoreTimeoutError naming the address and the last error.
Socket connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline);

// Writes or reads exactly n bytes before the deadline. Throws StoreTimeoutError
// when it passes, StoreError when the peer closes or the socket fails.
void send_all(const Socket& socket, const void* data, std::size_t n, Clock::time_point deadline);
void recv_exact(const Socket& socket, void* data, std::size_t n, Clock::time_point deadline);

void set_nonblocking(int fd);

// A port every interface can bind now, at random below the kernel's
// ephemeral range. A port from that range (what binding port 0 gives) may go
// to the next outgoing connection on the machine before the server meant to
// have it listens; busy nodes and collective tests made that happen. Throws
// StoreError when 200 tries found none.
std::uint16_t free_port();

// This machine's host name ("localhost" when it cannot be read).
std::string host_name();
// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& address);

}  // namespace dtrain::dist::net
