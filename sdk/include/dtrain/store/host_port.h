// How users write where a store or master lives -- a host alone, or a host
// and a port -- and how dtrain prints it back, for IPv4, IPv6 and names.
//
// Note [IPv6 address syntax]
// An IPv6 address is full of colons, so with a port it goes in brackets, as
// in URLs and torchrun: tcp://[::1]:29500, --rdzv-endpoint [::1]:29400.
// Alone (MASTER_ADDR, --master-addr) it may be bare, ::1, as torchrun takes
// it; brackets are accepted there too. What cannot be read one way only is
// refused with the expected form: "::1:29500" (is 29500 the port or part of
// the address?), "[::1" (unclosed), an empty host. Every message that
// prints an address with its port puts an IPv6 address in brackets
// (host_port), and MASTER_ADDR is exported bare, as torchrun does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtrain::store::net {

// True for an IPv6 address literal, with or without a zone ("fe80::1%eth0").
bool is_ipv6_literal(const std::string& host);

// "host:port", an IPv6 address in brackets: "10.0.0.1:29500", "[::1]:29500".
std::string host_port(const std::string& host, std::uint16_t port);

struct HostPort {
  std::string host;  // without brackets
  std::uint16_t port = 0;
};

// Reads "host:port" or "[v6addr]:port"; without a port, default_port when
// given. Throws dtrain::Error "<what>: <problem>; expected <form>" for an
// empty host, a bad or missing port, an unclosed or misplaced bracket, or
// an IPv6 address without brackets. `what` names the value ("init_method
// 'tcp://::1:1'"), `form` spells what is expected ("tcp://host:port").
HostPort parse_host_port(const std::string& text, std::optional<std::uint16_t> default_port,
                         const std::string& what, const std::string& form);

// Reads a host given alone: a name, an IPv4 address, or an IPv6 address
// bare or in brackets. Returns it without brackets. Throws dtrain::Error
// naming `what` for an empty host, an unclosed bracket, or colons that make
// no IPv6 address (a port appended: "::1:29500", "node1:29500").
std::string parse_host(const std::string& text, const std::string& what);

// The port number in `text`, 1..65535; throws dtrain::Error naming `what`.
std::uint16_t parse_port(const std::string& text, const std::string& what);

}  // namespace dtrain::store::net
