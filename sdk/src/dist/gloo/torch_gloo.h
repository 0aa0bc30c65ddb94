// The engine under dtrain's Gloo transport: LibTorch's own Gloo group,
// c10d::ProcessGroupGloo, reached only through c10d's Backend interface.
//
// Note [One Gloo in the process]
// The torch wheel's libtorch_cpu.so carries a build of Gloo and exports
// its names (gloo::..., c10d::ProcessGroupGloo). A second Gloo in the
// process -- Debian's libgloo, which defines the same names for another
// version -- can only be kept apart with symbol tricks (dlopen with
// RTLD_DEEPBIND, private copies of libc and libstdc++ names), which
// AddressSanitizer refuses and which crashed on a GPU machine's image. So
// dtrain uses the Gloo that LibTorch already loads, through the one
// interface LibTorch keeps stable for it: c10d::Backend's virtual
// collectives, each returning a c10d::Work. Only torch_gloo.cpp includes
// Gloo's headers (Debian's libgloo-dev, for declarations alone: it names
// gloo::transport::Device only through std::shared_ptr, and calls nothing
// of Gloo's), and no dtrain library links libgloo or defines a gloo name
// (lint.no_foreign_symbols checks the libraries).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "dtrain/dist/store_names.h"

namespace dtrain::dist::detail {

struct TorchGlooOptions {
  int rank = 0;
  int size = 1;
  // The address this rank listens on (Note [Which address Gloo binds]);
  // empty: this host's name, else the loopback address, as torch does.
  std::string hostname;
  // Connecting's limit, and a collective's when it names none.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

// Connects LibTorch's Gloo group over `store` (its keys go there as they
// are). Throws what connecting throws: c10's DistStoreError for the
// store's errors (a rank that did not publish its address in time), other
// c10::Errors and Gloo's own.
c10::intrusive_ptr<c10d::Backend> connect_torch_gloo(const std::shared_ptr<Store>& store,
                                                     const TorchGlooOptions& options);

}  // namespace dtrain::dist::detail
