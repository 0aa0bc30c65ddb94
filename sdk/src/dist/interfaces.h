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

// The local address this host uses to reach `host` (a name or an address),
// found by routing a UDP socket to it (connect(2) sends no packet): IPv6
// for an IPv6 host, and for a name the first of its addresses that routes,
// in the order the store's client tries them. nullopt when `host` does not
// resolve or no route leads there.
std::optional<std::string> address_towards(const std::string& host);

}  // namespace dtrain::dist::net
