// Addresses as users write them and as dtrain prints them (Note [IPv6
// address syntax], dtrain/store/host_port.h), the loopback test, and which local
// address the launcher and Gloo pick for an IPv6 master.
#include <gtest/gtest.h>

#include <net/if.h>

#include <string>

#include "dist/interfaces.h"
#include "dtrain/store/host_port.h"
#include "dtrain/store/socket.h"
#include "expect_error.h"
#include "ipv6.h"
#include "launch/address.h"

namespace {

namespace net = dtrain::store::net;
namespace dist_net = dtrain::dist::net;
using dtrain::testing::expect_error;

net::HostPort tcp(const std::string& text) {
  return net::parse_host_port(text, std::nullopt, "init_method 'tcp://" + text + "'",
                              "tcp://host:port");
}

TEST(HostPort, ReadsIpv4NamesAndBracketedIpv6) {
  EXPECT_EQ(tcp("10.0.0.1:29500").host, "10.0.0.1");
  EXPECT_EQ(tcp("10.0.0.1:29500").port, 29500);
  EXPECT_EQ(tcp("node7.cluster:80").host, "node7.cluster");
  EXPECT_EQ(tcp("[::1]:29500").host, "::1");
  EXPECT_EQ(tcp("[::1]:29500").port, 29500);
  EXPECT_EQ(tcp("[fd00::2]:1").host, "fd00::2");
  EXPECT_EQ(tcp("[fe80::1%eth0]:2").host, "fe80::1%eth0");
  EXPECT_EQ(tcp("[::ffff:10.0.0.1]:3").host, "::ffff:10.0.0.1");
  // Without a port, the default when there is one.
  EXPECT_EQ(net::parse_host_port("[::1]", 29400, "e", "f").port, 29400);
  EXPECT_EQ(net::parse_host_port("node7", 29400, "e", "f").host, "node7");
}

TEST(HostPort, MalformedFormsAreNamedWithTheExpectedForm) {
  const std::string form = "; expected tcp://host:port";
  expect_error([] { tcp("::1:29500"); },
               "init_method 'tcp://::1:29500': more than one ':' (an IPv6 address goes in "
               "brackets: [::1]:29500)" +
                   form);
  expect_error([] { tcp("[::1:29500"); }, "'tcp://[::1:29500': '[' is not closed by ']'" + form);
  expect_error([] { tcp("[::1]29500"); }, "'29500' follows ']' where ':' and a port belong");
  expect_error([] { tcp(":29500"); }, "'tcp://:29500': the host is empty" + form);
  expect_error([] { tcp("[]:29500"); }, "the host is empty");
  expect_error([] { tcp("[10.0.0.1]:5"); }, "'[10.0.0.1]' is not an IPv6 address");
  expect_error([] { tcp("[::1]"); }, "'tcp://[::1]': the port is missing" + form);
  expect_error([] { tcp("[::1]:"); }, "port '' is not a number in 1..65535");
  expect_error([] { tcp("[::1]:99999"); }, "port '99999' is not a number in 1..65535");
  expect_error([] { tcp("h:0"); }, "port '0'");
  expect_error([] { tcp("h:+5"); }, "port '+5'");
  expect_error([] { tcp("h]:5"); }, "a bracket out of place");
}

// Note [NCCL_SOCKET_IFNAME's rules]: as NCCL reads the list.
TEST(NcclSocketIfname, ChoosesAsNcclDoes) {
  EXPECT_TRUE(dist_net::nccl_interface_chosen("eth", "eth0"));
  EXPECT_TRUE(dist_net::nccl_interface_chosen("ib,eth", "eth1"));
  EXPECT_FALSE(dist_net::nccl_interface_chosen("eth", "ib0"));
  EXPECT_TRUE(dist_net::nccl_interface_chosen("eth0:5000", "eth0"));
  EXPECT_TRUE(dist_net::nccl_interface_chosen("=eth0", "eth0"));
  EXPECT_FALSE(dist_net::nccl_interface_chosen("=eth", "eth0"));
  EXPECT_FALSE(dist_net::nccl_interface_chosen("^docker,lo", "docker0"));
  EXPECT_FALSE(dist_net::nccl_interface_chosen("^docker,lo", "lo"));
  EXPECT_TRUE(dist_net::nccl_interface_chosen("^docker,lo", "eth0"));
  EXPECT_TRUE(dist_net::nccl_interface_chosen("^=docker", "docker0"));
  EXPECT_FALSE(dist_net::nccl_interface_chosen("^=docker0", "docker0"));
}

// Loopback has an address on every host: a list that takes it passes; one
// that can take nothing names itself and the interfaces there are.
TEST(NcclSocketIfname, AListThatChoosesNothingHereIsNamed) {
  dist_net::check_nccl_socket_ifname("lo");
  dist_net::check_nccl_socket_ifname("=lo");
  dist_net::check_nccl_socket_ifname("nosuch,l");
  expect_error([] { dist_net::check_nccl_socket_ifname("=l"); },
               "NCCL_SOCKET_IFNAME / socket_ifname '=l' chooses none of this host's interfaces "
               "with an address (");
  expect_error([] { dist_net::check_nccl_socket_ifname("nosuch9"); }, "'nosuch9' chooses none");
  // Excluding every prefix of one letter or digit leaves nothing.
  std::string everything = "^";
  for (char c = '0'; c <= 'z'; ++c) {
    everything += std::string(everything.size() > 1 ? "," : "") + c;
  }
  expect_error([&] { dist_net::check_nccl_socket_ifname(everything); }, "chooses none");
}

// Another interface of this host with an address, or "" where lo is the only one.
std::string an_interface_besides_loopback() {
  struct if_nameindex* names = if_nameindex();
  std::string found;
  for (const struct if_nameindex* i = names; i != nullptr && i->if_index != 0 && found.empty();
       ++i) {
    try {
      if (std::string(i->if_name) != "lo" && !dist_net::interface_address(i->if_name).empty()) {
        found = i->if_name;
      }
    } catch (const dtrain::Error&) {
      // No address: not one to bind.
    }
  }
  if_freenameindex(names);
  return found;
}

// Note [GLOO_SOCKET_IFNAME's list]: torch's comma-separated list; every
// name must exist, the first is bound.
TEST(GlooSocketIfname, AListBindsItsFirstNameAndChecksEveryOne) {
  EXPECT_EQ(dist_net::gloo_interface_address("lo"), "127.0.0.1");
  EXPECT_EQ(dist_net::gloo_interface_address("lo,lo"), "127.0.0.1");
  if (const std::string other = an_interface_besides_loopback(); !other.empty()) {
    EXPECT_EQ(dist_net::gloo_interface_address("lo," + other), "127.0.0.1");
    EXPECT_EQ(dist_net::gloo_interface_address(other + ",lo"), dist_net::interface_address(other));
  }
  // A single name is named as before; in a list, the list too.
  expect_error([] { dist_net::gloo_interface_address("nosuch9"); },
               "network interface 'nosuch9' does not exist on this host; interfaces with an "
               "address: ");
  expect_error([] { dist_net::gloo_interface_address("lo,nosuch9"); },
               "interface list 'lo,nosuch9': network interface 'nosuch9' does not exist on this "
               "host; interfaces with an address: ");
  expect_error([] { dist_net::gloo_interface_address("nosuch8,lo"); },
               "interface list 'nosuch8,lo': network interface 'nosuch8' does not exist");
  for (const std::string list : {"lo,", ",lo", "lo,,lo", ","}) {
    expect_error([&] { dist_net::gloo_interface_address(list); },
                 "interface list '" + list +
                     "' holds an empty name; expected names separated by single commas, such as "
                     "'eth0,eth1'");
  }
}

TEST(HostPort, AHostAloneMayBeBareIpv6) {
  EXPECT_EQ(net::parse_host("::1", "MASTER_ADDR"), "::1");
  EXPECT_EQ(net::parse_host("[::1]", "MASTER_ADDR"), "::1");
  EXPECT_EQ(net::parse_host("fd00::2", "MASTER_ADDR"), "fd00::2");
  EXPECT_EQ(net::parse_host("10.0.0.1", "MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(net::parse_host("node7", "MASTER_ADDR"), "node7");
  expect_error([] { net::parse_host("::1:29500", "MASTER_ADDR '::1:29500'"); },
               "MASTER_ADDR '::1:29500': a ':' but no IPv6 address (the port goes on its own); "
               "expected a host name, an IPv4 address or an IPv6 address (::1 or [::1])");
  expect_error([] { net::parse_host("node7:29500", "MASTER_ADDR"); }, "a ':' but no IPv6");
  expect_error([] { net::parse_host("[::1", "MASTER_ADDR"); }, "'[' is not closed by ']'");
  expect_error([] { net::parse_host("[::1]:5", "MASTER_ADDR"); }, "':5' after the address");
  expect_error([] { net::parse_host("", "MASTER_ADDR"); }, "MASTER_ADDR: the host is empty");
}

TEST(HostPort, Ipv6IsPrintedInBracketsBesideItsPort) {
  EXPECT_EQ(net::host_port("::1", 29500), "[::1]:29500");
  EXPECT_EQ(net::host_port("fe80::1%eth0", 7), "[fe80::1%eth0]:7");
  EXPECT_EQ(net::host_port("10.0.0.1", 29500), "10.0.0.1:29500");
  EXPECT_EQ(net::host_port("node7", 1), "node7:1");
  EXPECT_TRUE(net::is_ipv6_literal("::1"));
  EXPECT_TRUE(net::is_ipv6_literal("fe80::1%eth0"));
  EXPECT_FALSE(net::is_ipv6_literal("10.0.0.1"));
  EXPECT_FALSE(net::is_ipv6_literal("::1:29500x"));
}

TEST(Loopback, EverySpellingOfBothFamilies) {
  for (const char* loopback :
       {"127.0.0.1", "127.0.1.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1", "[::1]",
        "0000:0000:0000:0000:0000:0000:0000:0001", "::ffff:127.0.0.1", "localhost", "localhost6",
        "ip6-localhost", "ip6-loopback"}) {
    EXPECT_TRUE(net::is_loopback(loopback)) << loopback;
  }
  for (const char* other : {"10.0.0.1", "128.0.0.1", "::", "::2", "fd00::1", "::ffff:10.0.0.1",
                            "127.example.com", "node7", ""}) {
    EXPECT_FALSE(net::is_loopback(other)) << other;
  }
}

// dtrun's address for other nodes, and Gloo's for its peers, follow the
// master's family: ::1 for ::1, never this host's IPv4 address.
TEST(LocalAddress, TowardsAnIpv6MasterIsIpv6) {
  DTRAIN_SKIP_WITHOUT_IPV6();
  namespace address = dtrain::launch::address;
  EXPECT_EQ(address::route_source("::1", 29500), "::1");
  EXPECT_EQ(address::route_source("127.0.0.1", 29500), "127.0.0.1");
  EXPECT_EQ(dist_net::address_towards("::1"), "::1");
  EXPECT_TRUE(address::is_local("::1"));
  EXPECT_TRUE(address::is_local("127.0.0.1"));
  // Documentation's prefix (RFC 3849): no host has it.
  EXPECT_FALSE(address::is_local("2001:db8::77"));
  // An interface's address in the master's family.
  EXPECT_EQ(dist_net::interface_address("lo"), "127.0.0.1");
  EXPECT_EQ(dist_net::interface_address("lo", /*prefer_ipv6=*/true), "::1");
}

}  // namespace
