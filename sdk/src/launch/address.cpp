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
    hints.ai_family = AF_INET;  // the store speaks IPv4
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

}  // namespace

bool is_local(const std::string& host) {
  AddrInfo info(host, SOCK_STREAM);
  for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
    Fd socket(::socket(a->ai_family, SOCK_STREAM, 0));
    if (socket.fd < 0) {
      continue;
    }
    sockaddr_in address;
    std::memcpy(&address, a->ai_addr, sizeof(address));
    address.sin_port = 0;
    if (::bind(socket.fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      return true;
    }
  }
  return false;
}

std::string route_source(const std::string& host, std::uint16_t port) {
  AddrInfo info(host, SOCK_DGRAM);
  for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
    // Connecting a UDP socket sends nothing; it only picks the route.
    Fd socket(::socket(a->ai_family, SOCK_DGRAM, 0));
    if (socket.fd < 0) {
      continue;
    }
    sockaddr_in target;
    std::memcpy(&target, a->ai_addr, sizeof(target));
    target.sin_port = htons(port);
    if (::connect(socket.fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
      continue;
    }
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    if (::getsockname(socket.fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      return text;
    }
  }
  return {};
}

}  // namespace dtrain::launch::address
