// Small blocking-with-deadline TCP helpers for the store, over IPv4 and
// IPv6 alike (addresses as users write them: host_port.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::store::net {

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

// Listens on host:port (port 0 = any free port). "" is every interface of
// both families: one IPv6 socket with IPV6_V6ONLY off, so IPv4 clients
// reach it too, or an IPv4 one where this host has no IPv6. A host given
// is listened on in its own family. Throws StoreError naming the address
// and the reason (e.g. port in use).
Socket listen_tcp(const std::string& host, std::uint16_t port);
// The port a socket of either family is bound to.
std::uint16_t local_port(const Socket& socket);

// Connects, retrying while the peer is not up yet, until the deadline. Every
// address the host resolves to is tried in turn ("localhost" may be ::1 and
// 127.0.0.1). Throws StoreTimeoutError naming the address and the last error.
Socket connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline);

// Writes or reads exactly n bytes before the deadline. Throws StoreTimeoutError
// when it passes, StoreError when the peer closes or the socket fails.
void send_all(const Socket& socket, const void* data, std::size_t n, Clock::time_point deadline);
void recv_exact(const Socket& socket, void* data, std::size_t n, Clock::time_point deadline);

void set_nonblocking(int fd);

// A port the store can listen on now (listen_tcp("", port): both families),
// at random below the kernel's
// ephemeral range. A port from that range (what binding port 0 gives) may go
// to the next outgoing connection on the machine before the server meant to
// have it listens; busy nodes and collective tests made that happen. Throws
// StoreError when 200 tries found none.
std::uint16_t free_port();

// This machine's host name ("localhost" when it cannot be read).
std::string host_name();
// True for 127.0.0.0/8, ::1 in any spelling (0:0:0:0:0:0:0:1, [::1]),
// ::ffff:127.x.y.z, and the names "localhost", "localhost6", "ip6-localhost"
// and "ip6-loopback".
bool is_loopback(const std::string& address);

}  // namespace dtrain::store::net
