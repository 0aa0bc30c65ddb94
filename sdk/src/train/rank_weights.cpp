#include "dtrain/train/rank_weights.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

RankWeights parse_rank_weights(const std::string& text) {
  if (text == "equal") {
    return RankWeights::equal();
  }
  if (text == "auto") {
    return RankWeights::automatic();
  }
  RankWeights weights = RankWeights::of({});
  const std::string expected =
      "expected equal, auto or one positive number per process, in rank order, such as 3,1";
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string part =
        text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    char* end = nullptr;
    const double value = std::strtod(part.c_str(), &end);
    DTRAIN_CHECK(!part.empty() && end == part.c_str() + part.size(), expected, "; '", part,
                 "' is not a number");
    DTRAIN_CHECK(std::isfinite(value) && value > 0, expected, "; ", part,
                 " is not positive and finite");
    weights.fixed.push_back(value);
    if (comma == std::string::npos) {
      return weights;
    }
    begin = comma + 1;
  }
}

std::string to_string(const RankWeights& weights) {
  switch (weights.kind) {
    case RankWeights::Kind::kEqual:
      return "equal";
    case RankWeights::Kind::kAuto:
      return "auto";
    case RankWeights::Kind::kFixed:
      break;
  }
  return fmt::format("{}", fmt::join(weights.fixed, ","));
}

}  // namespace dtrain::train
