// The seeds of a run's random draws, each from --seed and the numbers that
// set the draw apart, so that a run resumed from a checkpoint (even one
// taken mid-epoch) draws exactly as an unbroken run, ranks draw
// differently, and a batch is the same whichever loader thread makes it.
#pragma once

#include <cstdint>

#include <ATen/core/Generator.h>

namespace dtrain::train {

// The generator of one training batch's augmentation: `seed`, the epoch,
// the rank and the batch's number in the epoch.
at::Generator batch_generator(uint64_t seed, int epoch, int rank, int64_t batch);

// The generator of the draws made for one copy of one test sample
// (test-time voting): `seed`, the copy and the sample's index in the test
// set, so that they depend neither on the batch nor on the process that
// evaluates the sample.
at::Generator sample_generator(uint64_t seed, int64_t copy, int64_t sample);

// Seeds LibTorch's default generators (dropout's masks) from `seed`, the
// epoch, the rank and the step; the epoch loop calls it before every step.
void seed_step_draws(uint64_t seed, int epoch, int rank, int64_t step);

}  // namespace dtrain::train
