// Small network facts an agent needs about its own node.
#pragma once

#include <cstdint>
#include <string>

#include "dtrain/store/host_port.h"
#include "dtrain/store/socket.h"

namespace dtrain::launch::address {

// True when `host` resolves to an address of this machine (one we can bind).
bool is_local(const std::string& host);

// The source address this machine uses to reach host:port, i.e. the address
// other nodes on that network reach us at: IPv6 when host is (or, for a
// name, when its first routable address is). Empty when it cannot be found.
std::string route_source(const std::string& host, std::uint16_t port);

// The host name, the loopback test, the free-port picker and the address
// syntax (Note [IPv6 address syntax]) the store's code uses too.
using store::net::free_port;
using store::net::host_name;
using store::net::host_port;
using store::net::is_loopback;

}  // namespace dtrain::launch::address
