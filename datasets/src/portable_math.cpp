#include "portable_math.h"

#include <cmath>
#include <cstdint>

namespace dtrain::datasets::portable {

namespace {

// pi/2 split in two (fdlibm's pio2_1 and pio2_1t): the first has 33
// significant bits, so k * kPiOver2High is exact for the k we see and the
// reduction x - k pi/2 loses nothing to cancellation.
constexpr double kPiOver2High = 1.57079632673412561417e+00;
constexpr double kPiOver2Low = 6.07710050650619224932e-11;
constexpr double kTwoOverPi = 6.36619772367581382433e-01;
constexpr double kLn2 = 6.93147180559945286227e-01;
constexpr double kSqrtHalf = 7.07106781186547524401e-01;

// Taylor series on |r| <= pi/4, to the first term below 1e-17.
double sin_reduced(double r) {
  const double r2 = r * r;
  const double tail =
      -1.0 / 6 +
      r2 * (1.0 / 120 +
            r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 + r2 * (-1.0 / 39916800 +
                                                           r2 * (1.0 / 6227020800.0 +
                                                                 r2 * (-1.0 / 1307674368000.0))))));
  return r + r * r2 * tail;
}

double cos_reduced(double r) {
  const double r2 = r * r;
  const double tail =
      -1.0 / 2 +
      r2 * (1.0 / 24 +
            r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
                                     r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 +
                                                                  r2 * (-1.0 / 87178291200.0 +
                                                                        r2 / 20922789888000.0))))));
  return 1.0 + r2 * tail;
}

}  // namespace

SinCos sin_cos(double x) {
  // x = k pi/2 + r with |r| <= pi/4; std::round and the exact product keep
  // this free of rounding-mode or library differences.
  const double k = std::round(x * kTwoOverPi);
  const double r = (x - k * kPiOver2High) - k * kPiOver2Low;
  const double s = sin_reduced(r);
  const double c = cos_reduced(r);
  switch (((static_cast<int64_t>(k) % 4) + 4) % 4) {
    case 0:
      return {s, c};
    case 1:
      return {c, -s};
    case 2:
      return {-s, -c};
    default:
      return {-c, s};
  }
}

double log(double x) {
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s) with
  // s = (m - 1) / (m + 1), |s| < 0.172, summed to the first term below 1e-19.
  int e = 0;
  double m = std::frexp(x, &e);  // exact: m in [1/2, 1)
  if (m < kSqrtHalf) {
    m *= 2.0;
    e -= 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double series = 1.0 / 21;
  for (int n = 19; n >= 1; n -= 2) {
    series = 1.0 / n + s2 * series;
  }
  return e * kLn2 + 2.0 * s * series;
}

}  // namespace dtrain::datasets::portable
