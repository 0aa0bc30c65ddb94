// init_process_group over IPv6 (Note [IPv6 address syntax], host_port.h):
// tcp://[::1]:port and env:// with MASTER_ADDR=::1 join Gloo ranks that
// all-reduce, with every connection of the job -- the store's and Gloo's --
// over IPv6; addresses that cannot be read one way only are refused before
// any contact. The joins skip without ::1 (ipv6.h).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "dtrain/dist/init.h"
#include "expect_error.h"
#include "ipv6.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

namespace dist = dtrain::dist;
using namespace std::chrono_literals;
using dtrain::testing::expect_error;

struct Connections {
  int ipv4 = 0;  // IPv4, or IPv4 mapped into IPv6 (::ffff:a.b.c.d)
  int ipv6 = 0;
};

// This process's connected TCP sockets, by the family of their peer.
Connections connected_tcp_sockets() {
  Connections found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    struct stat info {};
    int type = 0;
    socklen_t type_length = sizeof(type);
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof(peer);
    if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 || type != SOCK_STREAM ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) {
      continue;
    }
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&peer);
    const bool ipv6 = peer.ss_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr);
    (ipv6 ? found.ipv6 : found.ipv4) += 1;
  }
  return found;
}

// All-reduces across the default group, then checks that this rank talks to
// the others over IPv6 only: the store's connection and Gloo's pair at least.
void all_reduce_over_ipv6(int rank, int world) {
  at::Tensor t = at::full({64}, rank + 1.0);
  dist::all_reduce(t);
  EXPECT_TRUE(at::equal(t, at::full({64}, world * (world + 1) / 2.0)));
  const Connections connections = connected_tcp_sockets();
  EXPECT_EQ(connections.ipv4, 0) << "rank " << rank;
  EXPECT_GE(connections.ipv6, 2) << "rank " << rank;
  dist::barrier();
  dist::destroy_process_group();
}

dist::InitOptions over_tcp(const std::string& url, int rank) {
  return {.backend = "gloo", .init_method = url, .rank = rank, .world_size = 2, .timeout = 30s};
}

TEST(InitIpv6, TcpUrlWithABracketedAddress) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::string url = "tcp://[::1]:" + std::to_string(dtrain::testing::free_port());
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    dist::init_process_group(over_tcp(url, rank));
    all_reduce_over_ipv6(rank, 2);
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// MASTER_ADDR as torchrun and dtrun export it: bare.
TEST(InitIpv6, EnvWithABareMasterAddr) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::string port = std::to_string(dtrain::testing::free_port());
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    ::setenv("MASTER_ADDR", "::1", 1);
    ::setenv("MASTER_PORT", port.c_str(), 1);
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("WORLD_SIZE", "2", 1);
    dist::init_process_group({.backend = "gloo", .timeout = 30s});
    all_reduce_over_ipv6(rank, 2);
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Note [Which address Gloo binds], rule 1: a named interface with both
// families binds its IPv6 address when the master is IPv6.
TEST(InitIpv6, ANamedInterfaceBindsItsIpv6AddressForAnIpv6Master) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  const std::string url = "tcp://[::1]:" + std::to_string(dtrain::testing::free_port());
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    auto options = over_tcp(url, rank);
    options.socket_ifname = "lo";
    dist::init_process_group(options);
    all_reduce_over_ipv6(rank, 2);
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

dist::Rendezvous read(const std::string& url) {
  return dist::resolve_rendezvous({.init_method = url, .rank = 0, .world_size = 1});
}

TEST(InitIpv6, AddressesAreReadAsTorchReadsThem) {
  EXPECT_EQ(read("tcp://[::1]:29500").host, "::1");
  EXPECT_EQ(read("tcp://[::1]:29500").port, 29500);
  EXPECT_EQ(read("tcp://[fd00::2]:1").host, "fd00::2");
  EXPECT_EQ(read("tcp://10.0.0.1:29500").host, "10.0.0.1");
  EXPECT_EQ(read("tcp://node7:29500").host, "node7");
  dtrain::testing::ScopedEnv port("MASTER_PORT", "29501");
  for (const char* addr : {"::1", "[::1]"}) {
    dtrain::testing::ScopedEnv master("MASTER_ADDR", addr);
    EXPECT_EQ(read("env://").host, "::1") << addr;
    EXPECT_EQ(read("env://").port, 29501) << addr;
  }
}

TEST(InitIpv6, MalformedAddressesAreNamedBeforeAnyContact) {
  const std::string form = "expected tcp://host:port, or tcp://[v6addr]:port for IPv6";
  expect_error([] { read("tcp://::1:29500"); },
               "init_method 'tcp://::1:29500': more than one ':' (an IPv6 address goes in "
               "brackets: [::1]:29500); " +
                   form);
  expect_error([] { read("tcp://[::1:29500"); }, "'[' is not closed by ']'; " + form);
  expect_error([] { read("tcp://[::1]"); }, "init_method 'tcp://[::1]': the port is missing");
  expect_error([] { read("tcp://:29500"); }, "init_method 'tcp://:29500': the host is empty");
  expect_error([] { read("tcp://[]:29500"); }, "the host is empty");
  dtrain::testing::ScopedEnv port("MASTER_PORT", "29501");
  for (const char* addr : {"::1:29500", "[::1", "[::1]:29500"}) {
    dtrain::testing::ScopedEnv master("MASTER_ADDR", addr);
    expect_error([] { read("env://"); }, "MASTER_ADDR '" + std::string(addr) + "': ");
  }
}

}  // namespace
