// Which build of dtrain this process runs: for `--version`, for logs, and
// for init_process_group's check that every process of a job runs the same
// one (Note [One build per job] in src/dist/membership.h).
//
//   spdlog::info("{}", dtrain::util::build_info().describe());
//   // dtrain 0.1.0 (source 1a2b3c4d5e6f), LibTorch 2.11.0, with CUDA
#pragma once

#include <string>

namespace dtrain::util {

struct BuildInfo {
  std::string version;           // dtrain's, "0.1.0"
  std::string source_revision;   // cmake/SourceRevision.cmake: "1a2b3c4d5e6f",
                                 // "1a2b3c4d5e6f-dirty.0badf00d" or "unknown"
  std::string libtorch_version;  // the LibTorch dtrain was built against
  bool cuda = false;             // CUDA kernels and the NCCL backend compiled in

  // What processes of one job must share: dtrain's version and sources, and
  // LibTorch's version (the distributed sampler's order is at::randperm's).
  // Not CUDA: a job may mix machines with and without GPUs.
  std::string identity() const;
  // identity(), then whether CUDA is compiled in: the `--version` line.
  std::string describe() const;
};

const BuildInfo& build_info();

// Whether processes of other builds may share a job (DTRAIN_ALLOW_MIXED_BUILDS:
// "1" allows; unset, empty or "0" does not; anything else raises
// dtrain::Error naming the value). For builds known to work together, as
// during a rolling upgrade.
bool mixed_builds_allowed();

// What a job of mixed builds is told to do, after its message: both checks
// (init_process_group's and dtrun's agents') end with it.
inline constexpr const char* kSameBuildAdvice =
    "Build or install dtrain from the same sources, against the same LibTorch, on every node (or "
    "set DTRAIN_ALLOW_MIXED_BUILDS=1 for builds known to work together)";

}  // namespace dtrain::util
