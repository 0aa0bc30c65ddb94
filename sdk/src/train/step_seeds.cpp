#include "dtrain/train/step_seeds.h"

#include <initializer_list>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

namespace dtrain::train {

namespace {

// splitmix64's finaliser: nearby inputs (epochs, ranks, batches) give
// unrelated seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A seed for one stream of draws: --seed, what the stream is for, and the
// numbers that set it apart (epoch, rank, batch), mixed in turn.
uint64_t stream_seed(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t state = mix(seed);
  for (const uint64_t part : parts) {
    state = mix(state ^ part);
  }
  return state;
}

constexpr uint64_t kAugmentationStream = 1;
constexpr uint64_t kDropoutStream = 2;
constexpr uint64_t kSampleCopyStream = 3;

}  // namespace

at::Generator batch_generator(uint64_t seed, int epoch, int rank, int64_t batch) {
  return at::detail::createCPUGenerator(
      stream_seed(seed, {kAugmentationStream, static_cast<uint64_t>(epoch),
                         static_cast<uint64_t>(rank), static_cast<uint64_t>(batch)}));
}

at::Generator sample_generator(uint64_t seed, int64_t copy, int64_t sample) {
  return at::detail::createCPUGenerator(stream_seed(
      seed, {kSampleCopyStream, static_cast<uint64_t>(copy), static_cast<uint64_t>(sample)}));
}

void seed_step_draws(uint64_t seed, int epoch, int rank, int64_t step) {
  torch::manual_seed(stream_seed(seed, {kDropoutStream, static_cast<uint64_t>(epoch),
                                        static_cast<uint64_t>(rank), static_cast<uint64_t>(step)}));
}

}  // namespace dtrain::train
