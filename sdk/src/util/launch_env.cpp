#include "dtrain/util/launch_env.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "dtrain/util/errors.h"

namespace dtrain::util {

std::optional<int> env_int(const char* name) {
  if (name == nullptr) {
    return std::nullopt;
  }
  const char* raw = std::getenv(name);
  if (raw == nullptr || *raw == '\0') {
    return std::nullopt;
  }
  std::string_view text(raw);
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  DTRAIN_CHECK(ec == std::errc() && end == text.data() + text.size() && value >= 0,
               "environment variable ", name, "='", text, "' is not a non-negative integer");
  return value;
}

std::optional<bool> env_flag(const char* name) {
  const std::optional<int> value = env_int(name);
  if (!value) {
    return std::nullopt;
  }
  DTRAIN_CHECK(*value <= 1, "environment variable ", name, "='", *value, "' is not 0 or 1");
  return *value == 1;
}

namespace {

struct LauncherVars {
  const char* source;
  const char* rank;
  const char* local_rank;
  const char* world_size;
  const char* local_world_size;
};

// Checked in order; the first whose rank variable is set describes this process.
constexpr LauncherVars kLaunchers[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "MPI_LOCALNRANKS"},
    // SLURM_NTASKS_PER_NODE may read "2(x3)", so Slurm's local world size is left unknown.
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", nullptr},
};

}  // namespace

LaunchEnv read_launch_env() {
  LaunchEnv env;
  for (const auto& vars : kLaunchers) {
    std::optional<int> rank = env_int(vars.rank);
    if (!rank) {
      continue;
    }
    env.source = vars.source;
    env.rank = rank;
    env.local_rank = env_int(vars.local_rank);
    env.world_size = env_int(vars.world_size);
    env.local_world_size = env_int(vars.local_world_size);
    break;
  }
  // torchrun-style launchers may set LOCAL_RANK without RANK (single node).
  if (!env.local_rank) {
    env.local_rank = env_int("LOCAL_RANK");
  }
  env.share_gpu = env_flag(kShareGpuVariable).value_or(false);
  return env;
}

}  // namespace dtrain::util
