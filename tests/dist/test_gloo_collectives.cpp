// The Gloo backend's conformance: every case of collective_conformance.h
// on world sizes 2, 3 and 4, each on ranks forked for it (gloo_ranks.h).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "collective_conformance.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::CollectiveCase;
using dtrain::testing::CollectiveWorld;

using CaseInWorld = std::pair<CollectiveCase, int>;

// Every case on every world size it takes.
std::vector<CaseInWorld> cases_in_worlds() {
  std::vector<CaseInWorld> all;
  for (int world = 2; world <= 4; ++world) {
    for (const auto& conformance_case : dtrain::testing::conformance_cases_for("gloo", world)) {
      all.emplace_back(conformance_case, world);
    }
  }
  return all;
}

class GlooConformance : public ::testing::TestWithParam<CaseInWorld> {};

TEST_P(GlooConformance, Case) {
  const auto& [conformance_case, world] = GetParam();
  dtrain::testing::run_gloo_ranks(world, 60s, [&](int rank, int size) {
    conformance_case.run(CollectiveWorld{.rank = rank, .world = size, .backend = "gloo"});
  });
}

// Named Gloo/GlooConformance.Case/SubGroups_world3.
INSTANTIATE_TEST_SUITE_P(Gloo, GlooConformance, ::testing::ValuesIn(cases_in_worlds()),
                         [](const auto& info) {
                           return info.param.first.name + "_world" +
                                  std::to_string(info.param.second);
                         });

}  // namespace
