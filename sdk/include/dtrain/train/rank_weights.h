// How each epoch's samples and each step's global batch are split among
// the processes of a job (--rank-weights; Sharding in sharding.h does the
// split): equally, as DistributedSampler does; by one fixed weight per
// process ("3,1": known relative speeds, for mixed hardware); or "auto",
// by the compute rates measured in the epoch before.
#pragma once

#include <string>
#include <vector>

namespace dtrain::train {

struct RankWeights {
  enum class Kind { kEqual, kFixed, kAuto };
  Kind kind = Kind::kEqual;
  std::vector<double> fixed;  // kFixed: positive and finite, in rank order

  static RankWeights equal() { return {}; }
  static RankWeights automatic() { return {.kind = Kind::kAuto, .fixed = {}}; }
  static RankWeights of(std::vector<double> weights) {
    return {.kind = Kind::kFixed, .fixed = std::move(weights)};
  }
  bool operator==(const RankWeights&) const = default;
};

// Throws dtrain::Error saying what is wrong (the caller names the flag)
// when `text` is neither "equal", "auto" nor positive finite numbers
// separated by commas.
RankWeights parse_rank_weights(const std::string& text);

// As --rank-weights takes them: "equal", "auto", "3,1".
std::string to_string(const RankWeights& weights);

}  // namespace dtrain::train
