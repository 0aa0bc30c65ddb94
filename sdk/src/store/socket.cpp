#include "dtrain/store/socket.h"

#include <arpa/inet.h>
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

#include "dtrain/store/host_port.h"
#include "dtrain/store/store.h"

namespace dtrain::store::net {

namespace {

std::string address(const std::string& host, std::uint16_t port) {
  return host.empty() ? "*:" + std::to_string(port) : host_port(host, port);
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

// getaddrinfo's list, freed with it.
struct Resolved {
  addrinfo* list = nullptr;
  Resolved() = default;
  Resolved(const Resolved&) = delete;
  Resolved& operator=(const Resolved&) = delete;
  ~Resolved() {
    if (list != nullptr) {
      freeaddrinfo(list);
    }
  }
};

// Every address of host:port, of either family, in the resolver's order of
// preference (RFC 6724: usually IPv6 first where it routes).
void resolve(const std::string& host, std::uint16_t port, bool passive, Resolved* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string service = std::to_string(port);
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out->list);
  if (rc != 0) {
    out->list = nullptr;
    throw StoreError("cannot resolve store address " + address(host, port) + ": " +
                     gai_strerror(rc));
  }
}

std::string numeric_host(const sockaddr* address, socklen_t length) {
  char text[NI_MAXHOST] = {};
  if (getnameinfo(address, length, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) != 0) {
    return "?";
  }
  return text;
}

// A socket on every address of both families at `port`: IPv6 with
// IPV6_V6ONLY off, so that IPv4 peers reach it as ::ffff:a.b.c.d, or IPv4
// alone where this host has no IPv6 (the socket or the bind fails with
// EAFNOSUPPORT or EADDRNOTAVAIL) or allows no dual-stack socket. `reuse`
// sets SO_REUSEADDR, as a server wants. An invalid socket, and the errno in
// *error, when the port cannot be had.
Socket bind_any(std::uint16_t port, bool reuse, int* error) {
  const int one = reuse ? 1 : 0;
  const int off = 0;
  Socket dual(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (dual.valid() && setsockopt(dual.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0) {
    setsockopt(dual.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    any.sin6_port = htons(port);
    if (::bind(dual.fd(), reinterpret_cast<sockaddr*>(&any), sizeof(any)) == 0) {
      return dual;
    }
    if (errno == EADDRINUSE || errno == EACCES) {
      *error = errno;  // the port's fault, not the family's: IPv4 would fail too
      return {};
    }
  }
  Socket v4(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!v4.valid()) {
    *error = errno;
    return {};
  }
  setsockopt(v4.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = htons(port);
  if (::bind(v4.fd(), reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0) {
    *error = errno;
    return {};
  }
  return v4;
}

// A socket bound to the first of host's addresses that binds; the last
// errno in *error when none does.
Socket bind_host(const std::string& host, std::uint16_t port, int* error) {
  Resolved resolved;
  resolve(host, port, /*passive=*/true, &resolved);
  *error = EADDRNOTAVAIL;
  for (const addrinfo* a = resolved.list; a != nullptr; a = a->ai_next) {
    Socket socket(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!socket.valid()) {
      *error = errno;
      continue;
    }
    const int one = 1;
    setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(socket.fd(), a->ai_addr, a->ai_addrlen) == 0) {
      return socket;
    }
    *error = errno;
  }
  return {};
}

// One non-blocking connect to `a`, waiting until `until`; an invalid socket
// and the reason in *error when it fails.
Socket connect_one(const addrinfo* a, Clock::time_point until, std::string* error) {
  Socket socket(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
  if (!socket.valid()) {
    *error = std::strerror(errno);  // e.g. no IPv6 on this host
    return {};
  }
  set_nonblocking(socket.fd());
  int rc = ::connect(socket.fd(), a->ai_addr, a->ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    if (wait_for(socket.fd(), POLLOUT, until)) {
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      rc = so_error == 0 ? 0 : -1;
      errno = so_error;
    } else {
      errno = ETIMEDOUT;
    }
  }
  if (rc != 0) {
    *error = std::strerror(errno);
    return {};
  }
  const int one = 1;
  setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return socket;
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
  int error = 0;
  Socket socket =
      host.empty() ? bind_any(port, /*reuse=*/true, &error) : bind_host(host, port, &error);
  if (!socket.valid()) {
    throw StoreError("store cannot listen on " + address(host, port) + ": " + std::strerror(error));
  }
  if (::listen(socket.fd(), 512) != 0) {
    throw StoreError("store cannot listen on " + address(host, port) + ": " + std::strerror(errno));
  }
  return socket;
}

std::uint16_t local_port(const Socket& socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

Socket connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  // An address that drops packets must not use up the time of those after
  // it: each but the last gets this long per round.
  constexpr auto kPerAddress = std::chrono::seconds(2);
  std::string last_error = "no attempt made";
  auto backoff = std::chrono::milliseconds(10);
  do {
    Resolved resolved;
    resolve(host, port, /*passive=*/false, &resolved);
    const bool several = resolved.list != nullptr && resolved.list->ai_next != nullptr;
    std::string errors;
    for (const addrinfo* a = resolved.list; a != nullptr; a = a->ai_next) {
      const auto until =
          a->ai_next == nullptr ? deadline : std::min(deadline, Clock::now() + kPerAddress);
      std::string error;
      Socket socket = connect_one(a, until, &error);
      if (socket.valid()) {
        return socket;
      }
      // Which address said what, when there were several.
      errors += (errors.empty() ? "" : "; ") +
                (several ? numeric_host(a->ai_addr, a->ai_addrlen) + ": " : std::string()) + error;
    }
    last_error = errors;
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

// Binds as the store's server will (listen_tcp("", port)), so a port free
// for IPv4 but taken for IPv6, or the reverse, is not picked; without
// SO_REUSEADDR, so a port that connections still linger on is not either.
bool can_listen_on(std::uint16_t port) {
  int error = 0;
  return bind_any(port, /*reuse=*/false, &error).valid();
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
  std::string host = address;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  for (const char* name : {"localhost", "localhost6", "ip6-localhost", "ip6-loopback"}) {
    if (host == name) {
      return true;
    }
  }
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.substr(0, host.find('%')).c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      return v6.s6_addr[12] == 127;  // ::ffff:127.x.y.z
    }
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

}  // namespace dtrain::store::net
