// Which local address a backend binds: network interfaces by name, and the
// address on the route to the job's master. See Note [Which address Gloo
// binds] in process_group_gloo.h.
#pragma once

#include <optional>
#include <string>

namespace dtrain::dist::net {

// The IPv4 address of network interface `name` (its IPv6 address when it has
// no IPv4 one). Throws dtrain::Error naming `name`, saying whether it is
// missing or has no address, and listing the interfaces that have one.
std::string interface_address(const std::string& name);

// The local address this host uses to reach `host` (a name or an address),
// found by routing a UDP socket to it (connect(2) sends no packet); nullopt
// when `host` does not resolve or no route leads there.
std::optional<std::string> address_towards(const std::string& host);

}  // namespace dtrain::dist::net
