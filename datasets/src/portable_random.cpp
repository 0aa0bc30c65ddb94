#include "portable_random.h"

#include <cmath>

#include "portable_math.h"

namespace dtrain::datasets::portable {

uint64_t mix_seed(uint64_t seed, uint64_t tag) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (tag + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Random::uniform(double low, double high) {
  return low + (high - low) * uniform();
}

double Random::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  // u1 in (0, 1] so that the logarithm is finite.
  const double u1 = static_cast<double>((engine_() >> 11) + 1) * 0x1.0p-53;
  const double radius = std::sqrt(-2.0 * portable::log(u1));  // sqrt is exact in IEEE-754
  const SinCos angle = sin_cos(2.0 * kPi * uniform());
  spare_normal_ = radius * angle.sin;
  has_spare_normal_ = true;
  return radius * angle.cos;
}

uint64_t Random::below(uint64_t n) {
  // Reject the top 2^64 mod n values, which would make the low residues likelier.
  const uint64_t rejected = (~uint64_t{0} % n + 1) % n;  // 2^64 mod n
  uint64_t x = engine_();
  while (x > ~uint64_t{0} - rejected) {
    x = engine_();
  }
  return x % n;
}

}  // namespace dtrain::datasets::portable
