#include "address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dtrain/util/errors.h"

namespace dtrain::launch::address {

namespace {

struct AddrInfo {
  addrinfo* list = nullptr;
  AddrInfo(const std::string& host, int socktype) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;  // the store speaks IPv4 and IPv6
    hints.ai_socktype = socktype;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) {
      list = nullptr;
    }
  }
  ~AddrInfo() {
    if (list != nullptr) {
      ::freeaddrinfo(list);
    }
  }
};

struct Fd {
  int fd;
  explicit Fd(int value) : fd(value) {}
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

// A copy of `a`'s address with `port` in it, whichever its family.
sockaddr_storage with_port(const addrinfo* a, std::uint16_t port) {
  sockaddr_storage address{};
  std::memcpy(&address, a->ai_addr, a->ai_addrlen);
  if (a->ai_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(&address)->sin_port = htons(port);
  }
  return address;
}

}  // namespace

bool is_local(const std::string& host) {
  AddrInfo info(host, SOCK_STREAM);
  for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
    Fd socket(::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (socket.fd < 0) {
      continue;
    }
    sockaddr_storage address = with_port(a, 0);
    if (::bind(socket.fd, reinterpret_cast<sockaddr*>(&address), a->ai_addrlen) == 0) {
      return true;
    }
  }
  return false;
}

std::string route_source(const std::string& host, std::uint16_t port) {
  AddrInfo info(host, SOCK_DGRAM);
  for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
    // Connecting a UDP socket sends nothing; it only picks the route.
    Fd socket(::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (socket.fd < 0) {
      continue;
    }
    sockaddr_storage target = with_port(a, port);
    if (::connect(socket.fd, reinterpret_cast<sockaddr*>(&target), a->ai_addrlen) != 0) {
      continue;
    }
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (::getsockname(socket.fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
      continue;
    }
    // Numeric, with a link-local address's zone ("fe80::1%eth0").
    char text[NI_MAXHOST] = {};
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof(text), nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      return text;
    }
  }
  return {};
}

}  // namespace dtrain::launch::address
