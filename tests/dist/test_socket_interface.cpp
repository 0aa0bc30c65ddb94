// Note [Which address Gloo binds] (process_group_gloo.h), checked: a wrong
// interface name fails naming it, "lo" works, a GLOO_SOCKET_IFNAME list
// binds its first name once all exist, and across two network
// namespaces joined by a veth pair -- where this host's name resolves to
// 127.0.0.1, which would strand each rank in its own namespace -- Gloo binds
// the veth address, chosen by interface or by the route to the master, in
// the master's family (IPv4, or IPv6 where the veths have both).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <sched.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "dtrain/dist/init.h"
#include "multi_process.h"

namespace {

namespace dist = dtrain::dist;
using namespace std::chrono_literals;

dist::InitOptions gloo_options(const std::string& host, std::uint16_t port, int rank, int world) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return {.backend = "gloo",
          .init_method = "tcp://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port),
          .rank = rank,
          .world_size = world,
          .timeout = 20s};
}

void expect_all_ranks_passed(const std::vector<int>& codes) {
  for (std::size_t r = 0; r < codes.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << "rank " << r << " failed (its output is above)";
  }
}

TEST(SocketInterface, AnInterfaceThatDoesNotExistIsNamed) {
  const auto port = dtrain::testing::free_port();
  expect_all_ranks_passed(dtrain::testing::run_ranks(1, [&](int rank) {
    auto options = gloo_options("127.0.0.1", port, rank, 1);
    options.socket_ifname = "nosuch9";
    try {
      dist::init_process_group(options);
      ADD_FAILURE() << "init_process_group accepted interface nosuch9";
    } catch (const dtrain::Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("'nosuch9' does not exist"), std::string::npos) << message;
      EXPECT_NE(message.find("lo (127.0.0.1)"), std::string::npos) << message;
    }
  }));
}

TEST(SocketInterface, GlooSocketIfnameIsReadToo) {
  const auto port = dtrain::testing::free_port();
  expect_all_ranks_passed(dtrain::testing::run_ranks(1, [&](int rank) {
    ::setenv("GLOO_SOCKET_IFNAME", "nosuch8", 1);
    EXPECT_THROW(
        {
          try {
            dist::init_process_group(gloo_options("127.0.0.1", port, rank, 1));
          } catch (const dtrain::Error& e) {
            EXPECT_NE(std::string(e.what()).find("nosuch8"), std::string::npos) << e.what();
            throw;
          }
        },
        dtrain::Error);
  }));
}

// GLOO_SOCKET_IFNAME as torch reads it: a comma-separated list. Every name
// must exist (the wrong one is named); the ranks meet on the first, lo.
TEST(SocketInterface, GlooSocketIfnameTakesAList) {
  const auto port = dtrain::testing::free_port();
  expect_all_ranks_passed(dtrain::testing::run_ranks(1, [&](int rank) {
    ::setenv("GLOO_SOCKET_IFNAME", "lo,nosuch7", 1);
    try {
      dist::init_process_group(gloo_options("127.0.0.1", port, rank, 1));
      ADD_FAILURE() << "init_process_group accepted interface nosuch7";
    } catch (const dtrain::Error& e) {
      EXPECT_NE(std::string(e.what()).find("GLOO_SOCKET_IFNAME / socket_ifname: interface list "
                                           "'lo,nosuch7': network interface 'nosuch7' does not "
                                           "exist on this host"),
                std::string::npos)
          << e.what();
    }
  }));
  // lo, then an interface with an IPv4 address (or lo again where there is none).
  std::string second = "lo";
  ifaddrs* interfaces = nullptr;
  ASSERT_EQ(::getifaddrs(&interfaces), 0);
  for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET &&
        std::string(i->ifa_name) != "lo") {
      second = i->ifa_name;
      break;
    }
  }
  ::freeifaddrs(interfaces);
  const auto second_port = dtrain::testing::free_port();
  expect_all_ranks_passed(dtrain::testing::run_ranks(2, [&](int rank) {
    ::setenv("GLOO_SOCKET_IFNAME", ("lo," + second).c_str(), 1);
    dist::init_process_group(gloo_options("127.0.0.1", second_port, rank, 2));
    at::Tensor t = at::full({16}, rank + 1.0);
    dist::all_reduce(t);
    EXPECT_TRUE(at::equal(t, at::full({16}, 3.0)));
    dist::destroy_process_group();
  }));
}

TEST(SocketInterface, LoopbackWorks) {
  const auto port = dtrain::testing::free_port();
  expect_all_ranks_passed(dtrain::testing::run_ranks(2, [&](int rank) {
    auto options = gloo_options("127.0.0.1", port, rank, 2);
    options.socket_ifname = "lo";
    dist::init_process_group(options);
    at::Tensor t = at::full({16}, rank + 1.0);
    dist::all_reduce(t);
    EXPECT_TRUE(at::equal(t, at::full({16}, 3.0)));
    dist::destroy_process_group();
  }));
}

// Two network namespaces joined by a veth pair: rank r lives in namespace r
// with address 10.<n>.<m>.(r + 1) on interface <prefix><r>, and with ipv6_
// also fd77:<n>:<m>::(r + 1), which is then the address the ranks use.
class TwoNamespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "network namespaces need root";
    }
    const int id = static_cast<int>(::getpid() % 60000);
    prefix_ = "dtv" + std::to_string(id);
    subnet_ = "10." + std::to_string(200 + id / 10000 % 50) + "." + std::to_string(id % 250);
    subnet_id_ = id;
    const std::string a = prefix_ + "0", b = prefix_ + "1";
    const std::string script =
        "set -e; ip netns add " + a + "; ip netns add " + b + "; ip link add " + a +
        " type veth peer name " + b + "; ip link set " + a + " netns " + a + "; ip link set " + b +
        " netns " + b + "; ip -n " + a + " addr add " + ipv4_address(0) + "/24 dev " + a +
        "; ip -n " + b + " addr add " + ipv4_address(1) + "/24 dev " + b + "; for n in " + a + " " +
        b + "; do ip -n $n link set lo up; ip -n $n link set $n up; done" +
        (ipv6_
             ? "; ip -n " + a + " addr add " + ipv6_address(0) + "/64 dev " + a + " nodad; ip -n " +
                   b + " addr add " + ipv6_address(1) + "/64 dev " + b + " nodad"
             : "");
    created_ = true;
    if (std::system(("(" + script + ") >/dev/null 2>&1").c_str()) != 0) {
      GTEST_SKIP() << "cannot create network namespaces here (ip netns add, ip link add veth "
                      "or ip addr add failed)";
    }
  }
  void TearDown() override {
    if (created_) {
      std::system(("ip netns del " + prefix_ + "0 >/dev/null 2>&1; ip netns del " + prefix_ +
                   "1 >/dev/null 2>&1")
                      .c_str());
    }
  }

  std::string ipv4_address(int rank) const { return subnet_ + "." + std::to_string(rank + 1); }
  std::string ipv6_address(int rank) const {
    return "fd77:" + std::to_string(subnet_id_ / 250) + ":" + std::to_string(subnet_id_ % 250) +
           "::" + std::to_string(rank + 1);
  }
  std::string address(int rank) const { return ipv6_ ? ipv6_address(rank) : ipv4_address(rank); }
  std::string interface(int rank) const { return prefix_ + std::to_string(rank); }

  // Moves the calling (forked, single-threaded) rank into its namespace.
  void enter(int rank) const {
    const std::string path = "/var/run/netns/" + interface(rank);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << "cannot open " << path;
    ASSERT_EQ(::setns(fd, CLONE_NEWNET), 0) << "setns " << path;
    ::close(fd);
  }

  // Established TCP connections of this namespace between the two ranks'
  // addresses, from /proc/net/tcp and tcp6 (each 32-bit word of an address
  // as the kernel holds it, in hex). The store listens on IPv6 and IPv4 at
  // once, so the side it accepted of an IPv4 connection is in tcp6, mapped
  // (::ffff:a.b.c.d).
  int connections_between_the_ranks() const {
    auto hex = [this](const std::string& address, bool mapped) {
      char text[33] = {};
      if (ipv6_) {
        in6_addr a{};
        inet_pton(AF_INET6, address.c_str(), &a);
        for (int i = 0; i < 4; ++i) {
          std::snprintf(text + 8 * i, 9, "%08X", a.s6_addr32[i]);
        }
      } else {
        in_addr a{};
        inet_pton(AF_INET, address.c_str(), &a);
        std::snprintf(text, sizeof(text), "%08X", a.s_addr);
      }
      return (mapped ? "0000000000000000FFFF0000" : "") + std::string(text);
    };
    int count = 0;
    for (const bool v6_table : {false, true}) {
      const bool mapped = v6_table && !ipv6_;
      const std::string mine = hex(address(0), mapped), theirs = hex(address(1), mapped);
      std::ifstream table(v6_table ? "/proc/net/tcp6" : "/proc/net/tcp");
      std::string line;
      std::getline(table, line);  // header
      while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        fields >> slot >> local >> remote >> state;
        const bool between = (local.starts_with(mine + ":") && remote.starts_with(theirs + ":")) ||
                             (local.starts_with(theirs + ":") && remote.starts_with(mine + ":"));
        count += between && state == "01" ? 1 : 0;  // 01: ESTABLISHED
      }
    }
    return count;
  }

  // Both ranks all-reduce across the namespaces; with_interface names each
  // rank's veth (followed by `more`, the rest of a GLOO_SOCKET_IFNAME list),
  // else the route to the master (rank 0's address) decides.
  void run(bool with_interface, const std::string& more = "") {
    const std::uint16_t port = 29000 + static_cast<std::uint16_t>(::getpid() % 20000);
    expect_all_ranks_passed(dtrain::testing::run_ranks(2, [&](int rank) {
      enter(rank);
      auto options = gloo_options(address(0), port, rank, 2);
      if (with_interface) {
        options.socket_ifname = interface(rank) + more;
      }
      dist::init_process_group(options);
      at::Tensor t = at::full({256}, rank + 1.0);
      dist::all_reduce(t);
      EXPECT_TRUE(at::equal(t, at::full({256}, 3.0)));
      // The store's connection and Gloo's pair both run over the veth pair.
      EXPECT_GE(connections_between_the_ranks(), 2);
      dist::barrier();
      dist::destroy_process_group();
    }));
  }

  std::string prefix_;
  std::string subnet_;
  int subnet_id_ = 0;
  bool ipv6_ = false;
  bool created_ = false;
};

// The same with an IPv6 master: both veths have an IPv4 and an IPv6
// address, and Gloo must bind the IPv6 one -- by the route to the master
// or, for a named interface, by the master's family.
class TwoNamespacesIpv6 : public TwoNamespaces {
 protected:
  void SetUp() override {
    ipv6_ = true;
    TwoNamespaces::SetUp();
  }
};

TEST_F(TwoNamespaces, GlooBindsTheNamedInterface) {
  run(/*with_interface=*/true);
}

// Of a list, the first interface is bound: lo, second here, would leave
// each rank listening where the other cannot reach it.
TEST_F(TwoNamespaces, GlooBindsTheFirstInterfaceOfAList) {
  run(/*with_interface=*/true, ",lo");
}

TEST_F(TwoNamespaces, GlooBindsTheAddressOnTheRouteToTheMaster) {
  run(/*with_interface=*/false);
}

TEST_F(TwoNamespacesIpv6, GlooBindsTheNamedInterfacesIpv6Address) {
  run(/*with_interface=*/true);
}

TEST_F(TwoNamespacesIpv6, GlooBindsTheIpv6AddressOnTheRouteToTheMaster) {
  run(/*with_interface=*/false);
}

}  // namespace
