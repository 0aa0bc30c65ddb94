// Tests of IPv6 paths run on ::1; a machine without IPv6 (a kernel without
// it, or ::1 switched off) skips them, saying why, rather than failing.
//
//   TEST(Store, OverIpv6) {
//     DTRAIN_SKIP_WITHOUT_IPV6();
//     ...
//   }
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace dtrain::testing {

// Why ::1 cannot be used here; empty when a TCP socket can bind it.
inline std::string ipv6_loopback_missing() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return std::string("no IPv6 on this machine: socket(AF_INET6): ") + std::strerror(errno);
  }
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&loopback), sizeof(loopback)) == 0;
  const std::string reason = bound ? "" : std::string("cannot bind ::1: ") + std::strerror(errno);
  ::close(fd);
  return reason;
}

}  // namespace dtrain::testing

#define DTRAIN_SKIP_WITHOUT_IPV6()                                                          \
  do {                                                                                      \
    if (const std::string why = ::dtrain::testing::ipv6_loopback_missing(); !why.empty()) { \
      GTEST_SKIP() << why;                                                                  \
    }                                                                                       \
  } while (false)
