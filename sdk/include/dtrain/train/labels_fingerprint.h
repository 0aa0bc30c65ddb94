// A short fingerprint of a training set's labels, compared across the
// processes of a job (the Trainer does, when the job starts): --data-dir may name another copy of
// the dataset on each node, and copies that differ (another version,
// another split, a partial download of the same size) would otherwise
// train on silently, each process drawing its share of the epoch from
// its own data, so that DistributedSampler's split no longer covers one
// dataset.
//
// Labels, not points: integers are read the same on every machine, where
// generated or converted coordinates may differ in their last bits between
// CPUs (vectorised and FMA variants of math functions) without the data
// being different in any way that matters.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::train {

// 16 hex digits of a 64-bit FNV-1a hash, one step per int64 value, over
// each tensor's rank, sizes and values in order. Equal labels give equal
// fingerprints on any machine; a change of any one value gives another, and
// a change of several, of the order or of a shape does but for a chance of
// about 2^-64. Undefined tensors count as empty.
std::string labels_fingerprint(const std::vector<at::Tensor>& labels);

}  // namespace dtrain::train
