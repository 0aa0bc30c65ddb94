// A dtrain store seen as a c10d::Store, for LibTorch's process groups that
// move the bytes under dtrain's front end (the nccl and gloo backends): they
// meet through the group's own store, so every launcher and rendezvous
// dtrain knows works for them too. get() waits for its key, as c10d's
// stores do (ranks read the id rank 0 publishes).
#pragma once

#include <chrono>
#include <memory>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "dtrain/store/store.h"

namespace dtrain::dist::detail {

// Its calls throw c10's DistStoreError where `store` throws StoreError
// (c10d's process groups catch their own kind); `timeout` bounds get().
c10::intrusive_ptr<c10d::Store> as_c10d_store(std::shared_ptr<store::Store> store,
                                              std::chrono::milliseconds timeout);

}  // namespace dtrain::dist::detail
