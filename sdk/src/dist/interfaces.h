// Which local address a backend binds: network interfaces by name, and the
// address on the route to the job's master. See Note [Which address Gloo
// binds] in process_group_gloo.h.
#pragma once

#include <optional>
#include <string>

namespace dtrain::dist::net {

// The IPv4 address of network interface `name` (its IPv6 address when it has
// no IPv4 one); with prefer_ipv6, the other way round. Of IPv6 addresses a
// global one comes before a link-local one, which carries its zone
// ("fe80::1%eth0"). Throws dtrain::Error naming `name`, saying whether it is
// missing or has no address, and listing the interfaces that have one.
std::string interface_address(const std::string& name, bool prefer_ipv6 = false);

// Note [GLOO_SOCKET_IFNAME's list]
// torch reads GLOO_SOCKET_IFNAME as a comma-separated list of interface
// names ("eth0,eth1"), exact names rather than NCCL's prefixes, and makes
// one Gloo device per name, spreading a group's connections over them.
// dtrain's Gloo group has one connection per peer and so one device: every
// name listed must exist here with an address (a typo in the second name
// is as wrong as in the first, and fails on this rank, naming it, rather
// than on the ranks that cannot reach it), and the first is the one bound.

// The address to bind for the GLOO_SOCKET_IFNAME list `names` (as
// interface_address, for its first name). Throws dtrain::Error naming the
// list and the name that is empty, missing or without an address.
std::string gloo_interface_address(const std::string& names, bool prefer_ipv6 = false);

// Note [NCCL_SOCKET_IFNAME's rules]
// NCCL reads its interfaces from NCCL_SOCKET_IFNAME, a comma-separated list
// of name prefixes ("eth" takes eth0 and eth1), each optionally followed by
// ":port"; a leading '^' excludes the listed ones instead, and a '=' after
// it (or at the start) makes the names exact ("=eth0", "^=docker0").
// A list that chooses no interface here makes NCCL fail deep in its
// bootstrap ("no socket interface found"); dtrain checks it when the group
// is made, and names the list and the interfaces there are.

// Whether the NCCL_SOCKET_IFNAME list `spec` chooses interface `name`.
bool nccl_interface_chosen(const std::string& spec, const std::string& name);

// Throws dtrain::Error naming `spec` and listing the interfaces with an
// address when `spec` chooses none of them.
void check_nccl_socket_ifname(const std::string& spec);

// The local address this host uses to reach `host` (a name or an address),
// found by routing a UDP socket to it (connect(2) sends no packet): IPv6
// for an IPv6 host, and for a name the first of its addresses that routes,
// in the order the store's client tries them. nullopt when `host` does not
// resolve or no route leads there.
std::optional<std::string> address_towards(const std::string& host);

}  // namespace dtrain::dist::net
