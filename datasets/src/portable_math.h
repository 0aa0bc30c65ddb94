// sin, cos and log that give the same bits on every IEEE-754 machine.
//
// libm's transcendental functions are accurate to about an ulp, but which
// of two neighbouring doubles they return differs between glibc versions,
// musl and macOS. The synthetic shapes must come out bit for bit the same
// everywhere, so these are built from + - * / alone, each rounded exactly as
// IEEE-754 prescribes -- provided the compiler does not fuse a multiply and
// an add (datasets/CMakeLists.txt compiles these files with
// -ffp-contract=off). Accurate to a few ulps, which is all the shapes need.
#pragma once

namespace dtrain::datasets::portable {

constexpr double kPi = 3.14159265358979323846;

struct SinCos {
  double sin;
  double cos;
};

// sin and cos of x; meant for |x| up to a few thousand (angles of shapes).
SinCos sin_cos(double x);

// The natural logarithm of x > 0.
double log(double x);

}  // namespace dtrain::datasets::portable
