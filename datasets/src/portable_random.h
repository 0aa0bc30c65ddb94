// Random numbers that are the same on every machine for the same seed.
//
// std::mt19937_64's output is fixed by the C++ standard, but
// std::uniform_real_distribution and std::normal_distribution are not: each
// standard library turns the raw bits into numbers its own way. This class
// draws raw 64-bit words and converts them itself (portable_math.h for the
// logarithm and angles of the normal draws).
#pragma once

#include <cstdint>
#include <random>

namespace dtrain::datasets::portable {

// Mixes a seed with a tag into a new seed (SplitMix64's finaliser), so that
// each cloud or shuffle gets a stream of its own: streams do not overlap and
// one cloud does not depend on how many came before it.
uint64_t mix_seed(uint64_t seed, uint64_t tag);

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}

  uint64_t bits() { return engine_(); }
  // Uniform in [0, 1), a multiple of 2^-53.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in [low, high). Out of line, like every multiply-add here, so
  // that it is compiled with -ffp-contract=off (datasets/CMakeLists.txt).
  double uniform(double low, double high);
  // Standard normal (Box-Muller; the second value of each pair is kept for the next call).
  double normal();
  // Uniform in [0, n), without modulo bias; n > 0.
  uint64_t below(uint64_t n);

 private:
  std::mt19937_64 engine_;
  double spare_normal_ = 0.0;
  bool has_spare_normal_ = false;
};

}  // namespace dtrain::datasets::portable
