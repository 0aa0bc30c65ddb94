#include "dtrain/util/job_rank.h"

#include <atomic>

namespace dtrain::util {

namespace {
constexpr int kNoRank = -1;
std::atomic<int> g_job_rank{kNoRank};
}  // namespace

std::optional<int> job_rank() {
  const int rank = g_job_rank.load();
  return rank == kNoRank ? std::nullopt : std::optional<int>(rank);
}

void set_job_rank(std::optional<int> rank) {
  g_job_rank.store(rank.value_or(kNoRank));
}

}  // namespace dtrain::util
