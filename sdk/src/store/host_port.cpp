#include "dtrain/store/host_port.h"

#include <arpa/inet.h>

#include "dtrain/util/errors.h"

namespace dtrain::store::net {

namespace {

const char* const kHostForms =
    "a host name, an IPv4 address or an IPv6 address (::1 or [::1]), without a port";

// "<what>: <problem>; expected <form>", the shape of every syntax error here.
[[noreturn]] void reject(const std::string& what, const std::string& problem,
                         const std::string& form) {
  throw Error(what + ": " + problem + "; expected " + form);
}

// The address inside "[...]" at the start of `text`; `rest` gets what follows "]".
std::string bracketed(const std::string& text, std::string* rest, const std::string& what,
                      const std::string& form) {
  const auto close = text.find(']');
  if (close == std::string::npos) {
    reject(what, "'[' is not closed by ']'", form);
  }
  const std::string host = text.substr(1, close - 1);
  if (host.empty()) {
    reject(what, "the host is empty", form);
  }
  if (!is_ipv6_literal(host)) {
    reject(what, "'[" + host + "]' is not an IPv6 address (brackets are for IPv6 only)", form);
  }
  *rest = text.substr(close + 1);
  return host;
}

}  // namespace

bool is_ipv6_literal(const std::string& host) {
  const std::string address = host.substr(0, host.find('%'));  // a zone names an interface
  in6_addr parsed{};
  return !address.empty() && inet_pton(AF_INET6, address.c_str(), &parsed) == 1;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  const bool bracket = host.find(':') != std::string::npos;
  return (bracket ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::uint16_t parse_port(const std::string& text, const std::string& what) {
  long value = -1;
  if (!text.empty() && text.size() <= 5 &&
      text.find_first_not_of("0123456789") == std::string::npos) {
    value = std::stol(text);
  }
  DTRAIN_CHECK(value >= 1 && value <= 65535, what, ": port '", text,
               "' is not a number in 1..65535");
  return static_cast<std::uint16_t>(value);
}

HostPort parse_host_port(const std::string& text, std::optional<std::uint16_t> default_port,
                         const std::string& what, const std::string& form) {
  HostPort result;
  std::string port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    std::string rest;
    result.host = bracketed(text, &rest, what, form);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        reject(what, "'" + rest + "' follows ']' where ':' and a port belong", form);
      }
      has_port = true;
      port_text = rest.substr(1);
    }
  } else {
    const auto colon = text.rfind(':');
    if (colon != std::string::npos && text.find(':') != colon) {
      // Several colons: an IPv6 address, with or without a port -- which, no one can tell.
      reject(what, "more than one ':' (an IPv6 address goes in brackets: [::1]:29500)", form);
    }
    if (text.find_first_of("[]") != std::string::npos) {
      reject(what, "a bracket out of place", form);
    }
    result.host = text.substr(0, colon);
    if (colon != std::string::npos) {
      has_port = true;
      port_text = text.substr(colon + 1);
    }
  }
  if (result.host.empty()) {
    reject(what, "the host is empty", form);
  }
  if (has_port) {
    result.port = parse_port(port_text, what);
  } else if (default_port) {
    result.port = *default_port;
  } else {
    reject(what, "the port is missing", form);
  }
  return result;
}

std::string parse_host(const std::string& text, const std::string& what) {
  if (text.empty()) {
    reject(what, "the host is empty", kHostForms);
  }
  if (text.front() == '[') {
    std::string rest;
    const std::string host = bracketed(text, &rest, what, kHostForms);
    if (!rest.empty()) {
      reject(what, "'" + rest + "' after the address (the port goes on its own)", kHostForms);
    }
    return host;
  }
  if (text.find_first_of("[]") != std::string::npos) {
    reject(what, "a bracket out of place", kHostForms);
  }
  if (text.find(':') != std::string::npos && !is_ipv6_literal(text)) {
    reject(what, "a ':' but no IPv6 address (the port goes on its own)", kHostForms);
  }
  return text;
}

}  // namespace dtrain::store::net
