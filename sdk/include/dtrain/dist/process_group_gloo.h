// ProcessGroupGloo: collectives on CPU tensors over Gloo's TCP transport.
//
// Operations run on one worker thread per group, in issue order; send and
// recv go straight to the transport and may complete in any order. The
// bytes move through LibTorch's own Gloo (Note [One Gloo in the process]
// in src/dist/gloo/torch_gloo.h). Every rank of the group must construct
// its group with the same store (or store prefix) and size.
//
// Note [Which address Gloo binds]
// Every rank listens on one local address and publishes it in the store;
// its peers connect to it, so it must be an address they can reach. The
// address is, first match wins:
//   1. GlooOptions::iface (init_process_group: InitOptions::socket_ifname,
//      else GLOO_SOCKET_IFNAME; of a comma-separated list, whose names must
//      all exist, the first -- Note [GLOO_SOCKET_IFNAME's list] in
//      src/dist/interfaces.h): that interface's IPv4 address (IPv6 when
//      it has none), or its IPv6 address first with GlooOptions::prefer_ipv6,
//      which init_process_group sets when the master is reached over IPv6,
//      so that peers meet in the family the job's addresses are in; an
//      unknown interface raises dtrain::Error naming it and listing the
//      interfaces there are;
//   2. GlooOptions::hostname, as given (a name, an IPv4 or an IPv6 address);
//   3. init_process_group with a master (env://, tcp://): the local address
//      on the route to the master -- the one the store connection uses, so
//      it works where the host name resolves elsewhere (127.0.0.1 in
//      /etc/hosts, containers, network namespaces), and is IPv6 when the
//      master is;
//   4. otherwise (file://, or a group built by hand): this host's name, as
//      torch does.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dtrain/dist/process_group.h"
#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

struct GlooOptions {
  // How long a collective may take before it fails (and connecting, too).
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // Network interface to bind (GLOO_SOCKET_IFNAME), or a comma-separated
  // list of them whose first is bound; empty: see hostname.
  std::string iface;
  // Address (or name) other ranks reach this one at, when iface is empty;
  // empty: this host's name. See Note [Which address Gloo binds].
  std::string hostname;
  // With iface: bind its IPv6 address rather than its IPv4 one.
  bool prefer_ipv6 = false;
  // Options from the environment: GLOO_SOCKET_IFNAME.
  static GlooOptions from_env();
};

class ProcessGroupGloo : public ProcessGroup {
 public:
  // Connects to every other rank (blocks until all have joined or the
  // timeout passes; then throws naming the ranks still missing).
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                   GlooOptions options = GlooOptions::from_env(), std::string name = "default");
  ~ProcessGroupGloo() override;

  std::string backend_name() const override { return "gloo"; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::dist
