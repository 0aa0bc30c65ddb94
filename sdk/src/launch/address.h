// Small network facts an agent needs about its own node.
#pragma once

#include <cstdint>
#include <string>

#include "../dist/socket.h"

namespace dtrain::launch::address {

// True when `host` resolves to an address of this machine (one we can bind).
bool is_local(const std::string& host);

// The source address this machine uses to reach host:port, i.e. the address
// other nodes on that network reach us at. Empty when it cannot be found.
std::string route_source(const std::string& host, std::uint16_t port);

// The host name, the loopback test and the free-port picker the store's code
// uses too.
using dist::net::free_port;
using dist::net::host_name;
using dist::net::is_loopback;

}  // namespace dtrain::launch::address
