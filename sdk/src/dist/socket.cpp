#include "socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "dtrain/dist/store.h"

namespace dtrain::dist::net {

namespace {

std::string address(const std::string& host, std::uint16_t port) {
  return (host.empty() ? std::string("*") : host) + ":" + std::to_string(port);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits for `events` on fd until the deadline; false when it passed.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) {
      return true;
    }
    if (ready == 0) {
      return false;
    }
    if (errno != EINTR) {
      throw StoreError(std::string("poll failed: ") + std::strerror(errno));
    }
  }
}

addrinfo* resolve(const std::string& host, std::uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    throw StoreError("cannot resolve store address " + address(host, port) + ": " +
                     gai_strerror(rc));
  }
  return result;
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = other.release();
  }
  return *this;
}

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

Socket listen_tcp(const std::string& host, std::uint16_t port) {
  addrinfo* info = resolve(host, port, /*passive=*/true);
  Socket socket(::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol));
  if (!socket.valid()) {
    freeaddrinfo(info);
    throw StoreError(std::string("cannot create a socket: ") + std::strerror(errno));
  }
  const int one = 1;
  setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int bound = ::bind(socket.fd(), info->ai_addr, info->ai_addrlen);
  const int bind_errno = errno;
  freeaddrinfo(info);
  if (bound != 0) {
    throw StoreError("store cannot listen on " + address(host, port) + ": " +
                     std::strerror(bind_errno));
  }
  if (::listen(socket.fd(), 512) != 0) {
    throw StoreError("store cannot listen on " + address(host, port) + ": " + std::strerror(errno));
  }
  return socket;
}

std::uint16_t local_port(const Socket& socket) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

Socket connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  std::string last_error = "no attempt made";
  auto backoff = std::chrono::milliseconds(10);
  do {
    addrinfo* info = resolve(host, port, /*passive=*/false);
    Socket socket(::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol));
    set_nonblocking(socket.fd());
    int rc = ::connect(socket.fd(), info->ai_addr, info->ai_addrlen);
    freeaddrinfo(info);
    if (rc != 0 && errno == EINPROGRESS) {
      if (wait_for(socket.fd(), POLLOUT, deadline)) {
        int error = 0;
        socklen_t len = sizeof(error);
        getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &len);
        rc = error == 0 ? 0 : -1;
        errno = error;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      const int one = 1;
      setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return socket;
    }
    last_error = std::strerror(errno);
    std::this_thread::sleep_for(
        std::min(backoff, std::chrono::milliseconds(remaining_ms(deadline))));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  } while (Clock::now() < deadline);
  throw StoreTimeoutError("could not reach the store at " + address(host, port) +
                          " before the timeout: " + last_error);
}

void send_all(const Socket& socket, const void* data, std::size_t n, Clock::time_point deadline) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (n > 0) {
    const ssize_t sent = ::send(socket.fd(), p, n, MSG_NOSIGNAL);
    if (sent > 0) {
      p += sent;
      n -= static_cast<std::size_t>(sent);
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_for(socket.fd(), POLLOUT, deadline)) {
        throw StoreTimeoutError("timed out sending to the store");
      }
    } else {
      throw StoreError(std::string("lost the connection to the store while sending: ") +
                       std::strerror(errno));
    }
  }
}

void recv_exact(const Socket& socket, void* data, std::size_t n, Clock::time_point deadline) {
  auto* p = static_cast<std::uint8_t*>(data);
  while (n > 0) {
    const ssize_t got = ::recv(socket.fd(), p, n, 0);
    if (got > 0) {
      p += got;
      n -= static_cast<std::size_t>(got);
    } else if (got == 0) {
      throw StoreError("the store closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!wait_for(socket.fd(), POLLIN, deadline)) {
        throw StoreTimeoutError("timed out waiting for the store to answer");
      }
    } else {
      throw StoreError(std::string("lost the connection to the store: ") + std::strerror(errno));
    }
  }
}

namespace {

// The first port the kernel hands to outgoing connections (32768 unless the
// machine says otherwise).
int ephemeral_range_start() {
  int start = 32768;
  if (std::FILE* range = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(range, "%d", &start) != 1) {
      start = 32768;
    }
    std::fclose(range);
  }
  return start;
}

bool can_listen_on(std::uint16_t port) {
  Socket socket(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  return socket.valid() &&
         ::bind(socket.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
}

}  // namespace

std::uint16_t free_port() {
  const int high = ephemeral_range_start();
  const int low = high > 11000 ? 10000 : 1024;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(low, high - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port = static_cast<std::uint16_t>(pick(random));
    if (can_listen_on(port)) {
      return port;
    }
  }
  throw StoreError("no free port in [" + std::to_string(low) + ", " + std::to_string(high) +
                   ") after 200 tries");
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return "localhost";
  }
  return name;
}

bool is_loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1" || address == "localhost";
}

}  // namespace dtrain::dist::net
