// The TCP store over IPv6: a server on every address is one dual-stack
// socket that 127.0.0.1 and ::1 both reach, a server on a given address
// listens in that address's family, and a client tries every address a
// name resolves to. Skips without ::1 (ipv6.h).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "dtrain/store/socket.h"
#include "dtrain/store/tcp_store.h"
#include "ipv6.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
namespace net = dtrain::store::net;
using dtrain::store::StoreError;
using dtrain::store::StoreTimeoutError;
using dtrain::store::TcpStore;
using dtrain::store::TcpStoreOptions;
using dtrain::store::TcpStoreServer;

TcpStore client(const std::string& host, std::uint16_t port) {
  return TcpStore(TcpStoreOptions().host(host).port(port).timeout(5s));
}

TEST(TcpStoreIpv6, SetAndGetOverLoopback) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  TcpStore host(TcpStoreOptions().host("::1").port(0).is_server(true).timeout(5s));
  TcpStore other = client("::1", host.port());
  other.set("from", std::string("::1"));
  EXPECT_EQ(host.get_string("from"), "::1");
  EXPECT_EQ(other.add("n", 2), 2);
}

TEST(TcpStoreIpv6, OneServerOnEveryAddressServesBothFamilies) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  TcpStoreServer server(0);
  TcpStore v4 = client("127.0.0.1", server.port());
  TcpStore v6 = client("::1", server.port());
  v4.set("by", std::string("ipv4"));
  EXPECT_EQ(v6.get_string("by"), "ipv4");
  v6.set("by", std::string("ipv6"));
  EXPECT_EQ(v4.get_string("by"), "ipv6");
  EXPECT_EQ(v4.add("count", 1) + v6.add("count", 1), 3);
}

// A port that something holds for IPv6 only is in use for the server: it
// must not quietly fall back to IPv4 alone, where IPv6 clients would meet
// the other program.
TEST(TcpStoreIpv6, APortHeldForIpv6OnlyIsInUse) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const int holder = ::socket(AF_INET6, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  const int on = 1;
  ASSERT_EQ(setsockopt(holder, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)), 0);
  sockaddr_in6 any{};
  any.sin6_family = AF_INET6;
  any.sin6_addr = in6addr_any;
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  sockaddr_in6 bound{};
  socklen_t length = sizeof(bound);
  getsockname(holder, reinterpret_cast<sockaddr*>(&bound), &length);
  const std::uint16_t port = ntohs(bound.sin6_port);
  try {
    TcpStoreServer server(port);
    ADD_FAILURE() << "the server took port " << port << ", held for IPv6";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("*:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  ::close(holder);
}

// listen_tcp with an address listens in that address's family only.
TEST(TcpStoreIpv6, AServerOnAGivenAddressListensInItsFamily) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  net::Socket listener = net::listen_tcp("::1", 0);
  const std::uint16_t port = net::local_port(listener);
  ASSERT_NE(port, 0);
  EXPECT_TRUE(net::connect_tcp("::1", port, net::Clock::now() + 2s).valid());
  EXPECT_THROW(net::connect_tcp("127.0.0.1", port, net::Clock::now() + 200ms), StoreTimeoutError);
  net::Socket v4 = net::listen_tcp("127.0.0.1", 0);
  EXPECT_THROW(net::connect_tcp("::1", net::local_port(v4), net::Clock::now() + 200ms),
               StoreTimeoutError);
}

TEST(TcpStoreIpv6, UnreachableServerIsNamedInBrackets) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::uint16_t port = dtrain::testing::free_port();
  try {
    TcpStore(TcpStoreOptions().host("::1").port(port).timeout(300ms));
    ADD_FAILURE() << "connected to nothing";
  } catch (const StoreTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("[::1]:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

// A name with an IPv6 and an IPv4 address (as "localhost" has on many
// machines) reaches a server on IPv4 alone: the client goes on to the
// second address when the first refuses. The name is made in a private
// /etc/hosts, bind-mounted in a mount namespace of a child process.
TEST(TcpStoreIpv6, AClientTriesEveryAddressOfAName) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  dtrain::testing::TempDir dir;
  std::ofstream(dir.file("hosts")) << "::1 dtrain-both\n127.0.0.1 dtrain-both\n";
  const auto codes = dtrain::testing::run_ranks(1, [&](int) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(dir.file("hosts").c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
      std::_Exit(77);  // no mount namespace here (not root, or a sandbox)
    }
    net::Socket v4 = net::listen_tcp("127.0.0.1", 0);
    net::Socket v6 = net::listen_tcp("::1", 0);
    // One order or the other, one of the two is tried second.
    for (const std::uint16_t port : {net::local_port(v4), net::local_port(v6)}) {
      EXPECT_TRUE(net::connect_tcp("dtrain-both", port, net::Clock::now() + 5s).valid())
          << "port " << port;
    }
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  });
  if (codes[0] == 77) {
    GTEST_SKIP() << "cannot bind-mount a private /etc/hosts here";
  }
  EXPECT_EQ(codes[0], 0);
}

}  // namespace
