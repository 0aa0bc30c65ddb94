// An epoch's training batches, made ahead of the steps on loader threads
// (data::PrefetchLoader, two batches ahead per worker as DataLoader's
// prefetch_factor): this rank's shard in batches of its batch size from
// step `first_step` on, each made by the dataset from its own generator
// (batch_generator) and pinned when they go to a GPU, so the copy does not
// block. The last batch takes what is left: fewer, or one more (Sharding).
#pragma once

#include <cstdint>
#include <memory>

#include "dtrain/data/prefetch_loader.h"
#include "dtrain/train/dataset.h"
#include "dtrain/train/sharding.h"
#include "dtrain/train/train_epoch.h"

namespace dtrain::train::detail {

// Keeps a reference to `data`, which must outlive the loader.
std::unique_ptr<data::PrefetchLoader<Batch>> epoch_batches(const Dataset& data,
                                                           const EpochShard& shard,
                                                           int64_t first_step,
                                                           const EpochSettings& settings, int epoch,
                                                           int rank);

}  // namespace dtrain::train::detail
