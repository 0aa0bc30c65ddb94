// Checks of numeric command-line values that say what was expected in
// plain words ("--epochs: must be positive, got 0"), for CLI11 options:
//
//   app.add_option("--epochs", epochs)->check(dtrain::util::positive());
//
// CLI11's own PositiveNumber and NonNegativeNumber print their range with
// double's largest value written out in full (309 digits).
#pragma once

#include <CLI/CLI.hpp>

namespace dtrain::util {

// A number > 0.
CLI::Validator positive();
// A number >= 0.
CLI::Validator non_negative();
// A whole number in [0, 2^64): seeds, which would otherwise wrap ("-1")
// or saturate (a 30-digit value) on the way into a uint64_t.
CLI::Validator unsigned_integer();

}  // namespace dtrain::util
