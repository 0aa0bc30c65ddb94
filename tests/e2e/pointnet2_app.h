// What the end-to-end tests of train_pointnet2 share: running it, its
// one-line errors, and two processes of a small run under dtrun.
#pragma once

#include <string>
#include <vector>

#include "test_support.h"

namespace dtrain::testing::pointnet2 {

inline ProcessResult run_app(std::vector<std::string> args) {
  args.insert(args.begin(), DTRAIN_TRAIN_POINTNET2_PATH);
  return run_process(args);
}

// The whole output is one line starting "train_pointnet2: error:" and containing `fragment`.
inline void expect_one_line_error(const ProcessResult& result, int exit_code,
                                  const std::string& fragment) {
  dtrain::testing::expect_one_line_error(result, exit_code, "train_pointnet2", fragment);
}

// Two processes of small_synthetic_run under dtrun, with `more` flags.
inline ProcessResult two_processes(const TempDir& dir, const std::string& csv,
                                   std::vector<std::string> more) {
  std::vector<std::string> args{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& arg : small_synthetic_run(dir.file("shapes"), csv)) {
    args.push_back(arg);
  }
  args.insert(args.end(), more.begin(), more.end());
  return run_process(args);
}

}  // namespace dtrain::testing::pointnet2
