#include "interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string_view>

#include "dtrain/util/errors.h"

namespace dtrain::dist::net {

namespace {

// The address as text; an IPv6 link-local one with its zone ("fe80::1%eth0"),
// without which it cannot be bound.
std::string address_text(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text,
              sizeof(text));
  } else if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    char zone[IF_NAMESIZE] = {};
    if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr) && v6->sin6_scope_id != 0 &&
        if_indextoname(v6->sin6_scope_id, zone) != nullptr) {
      return std::string(text) + "%" + zone;
    }
  }
  return text;
}

bool is_link_local(const sockaddr* address) {
  return address->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
}

struct Addresses {
  std::string ipv4;
  std::string ipv6;
  bool ipv6_link_local = false;
};

// Every interface that has an address, with its first IPv4 and IPv6 ones
// (a global IPv6 address before a link-local one: peers off the link can
// reach it, and it needs no zone).
std::map<std::string, Addresses> interfaces_with_addresses() {
  ifaddrs* list = nullptr;
  DTRAIN_CHECK(getifaddrs(&list) == 0, "cannot list the network interfaces (getifaddrs)");
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, &freeifaddrs);
  std::map<std::string, Addresses> found;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) {
      continue;
    }
    Addresses& entry = found[i->ifa_name];
    if (i->ifa_addr->sa_family == AF_INET && entry.ipv4.empty()) {
      entry.ipv4 = address_text(i->ifa_addr);
    } else if (i->ifa_addr->sa_family == AF_INET6 &&
               (entry.ipv6.empty() || (entry.ipv6_link_local && !is_link_local(i->ifa_addr)))) {
      entry.ipv6 = address_text(i->ifa_addr);
      entry.ipv6_link_local = is_link_local(i->ifa_addr);
    }
  }
  std::erase_if(
      found, [](const auto& item) { return item.second.ipv4.empty() && item.second.ipv6.empty(); });
  return found;
}

}  // namespace

std::string interface_address(const std::string& name, bool prefer_ipv6) {
  const auto interfaces = interfaces_with_addresses();
  if (const auto it = interfaces.find(name); it != interfaces.end()) {
    const Addresses& a = it->second;
    if (prefer_ipv6) {
      return a.ipv6.empty() ? a.ipv4 : a.ipv6;
    }
    return a.ipv4.empty() ? a.ipv6 : a.ipv4;
  }
  std::string known;
  for (const auto& [other, addresses] : interfaces) {
    known += (known.empty() ? "" : ", ") + other + " (" +
             (addresses.ipv4.empty() ? addresses.ipv6 : addresses.ipv4) + ")";
  }
  const bool exists = if_nametoindex(name.c_str()) != 0;
  throw Error("network interface '" + name + "' " +
              (exists ? "has no IP address" : "does not exist") +
              " on this host; interfaces with an address: " + (known.empty() ? "none" : known));
}

std::string gloo_interface_address(const std::string& names, bool prefer_ipv6) {
  std::string first;
  std::string_view list = names;
  for (bool more = true; more;) {
    const std::string name(list.substr(0, list.find(',')));
    more = name.size() < list.size();
    list.remove_prefix(std::min(list.size(), name.size() + 1));
    DTRAIN_CHECK(!name.empty(), "interface list '", names,
                 "' holds an empty name; expected names separated by single commas, such as "
                 "'eth0,eth1'");
    try {
      const std::string address = interface_address(name, prefer_ipv6);
      if (first.empty()) {
        first = address;
      }
    } catch (const Error& e) {
      throw Error(name.size() == names.size() ? e.what()
                                              : "interface list '" + names + "': " + e.what());
    }
  }
  return first;
}

bool nccl_interface_chosen(const std::string& spec, const std::string& name) {
  std::string_view list = spec;
  const bool exclude = list.starts_with('^');
  if (exclude) {
    list.remove_prefix(1);
  }
  const bool exact = list.starts_with('=');
  if (exact) {
    list.remove_prefix(1);
  }
  bool listed = false;
  while (!list.empty() && !listed) {
    const std::string_view entry = list.substr(0, list.find(','));
    list.remove_prefix(std::min(list.size(), entry.size() + 1));
    const std::string_view prefix = entry.substr(0, entry.find(':'));  // without ":port"
    listed = exact ? name == prefix : std::string_view(name).starts_with(prefix);
  }
  return listed != exclude;
}

void check_nccl_socket_ifname(const std::string& spec) {
  const auto interfaces = interfaces_with_addresses();
  std::string known;
  for (const auto& [name, addresses] : interfaces) {
    if (nccl_interface_chosen(spec, name)) {
      return;
    }
    known += (known.empty() ? "" : ", ") + name;
  }
  throw Error("NCCL_SOCKET_IFNAME / socket_ifname '" + spec +
              "' chooses none of this host's interfaces with an address (" +
              (known.empty() ? std::string("none") : known) +
              "); it lists name prefixes, '^' before the list excludes them, '=' makes them "
              "exact");
}

std::optional<std::string> address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* resolved = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &resolved) != 0 || resolved == nullptr) {
    return std::nullopt;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(resolved, &freeaddrinfo);
  for (const addrinfo* a = resolved; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      continue;
    }
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    const bool routed = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
                        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    ::close(fd);
    if (routed) {
      return address_text(reinterpret_cast<const sockaddr*>(&local));
    }
  }
  return std::nullopt;
}

}  // namespace dtrain::dist::net
