// The fixture of dtrun's tests on one machine (test_dtrun.cpp,
// test_dtrun_elastic.cpp): a clean launcher environment, a scratch folder
// the workers write to ($OUT), and dtrun run to its end.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "dtrun_test_util.h"

namespace dtrain::testing {

inline const std::string kDtrun = DTRAIN_DTRUN_PATH;

class Dtrun : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"OMP_NUM_THREADS", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                             "CUDA_VISIBLE_DEVICES", "TORCHELASTIC_RESTART_COUNT"}) {
      ::unsetenv(name);
    }
  }
  std::string file(const std::string& name) const { return dir_.file(name); }
  std::string dir() const { return dir_.path().string(); }
  // Runs dtrun to its end (at most `deadline`) and returns its exit code.
  int run(const std::vector<std::string>& flags, const std::string& script,
          std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    auto dtrun = start_dtrun(kDtrun, flags, script, dir());
    const int code = dtrun->wait(deadline);
    output_ = dtrun->output();
    return code;
  }
  pid_t read_pid(const std::string& name) const { return std::stoi(read_text(file(name))); }

  TempDir dir_;
  std::string output_;
};

}  // namespace dtrain::testing
