// Linked into every test program that links LibTorch (dtrain_add_gtest):
// a run in which every test skipped says so in one line, which CTest reads
// to show the run as skipped (cmake/GTestSuites.cmake).
//
// Note [One process per test suite]
// Starting a program on LibTorch takes ~0.6 s on the 2-core CI machine
// (loading libtorch_cpu and libtorch_cuda), longer than most unit tests
// themselves: with one process per test, 620 tests spent ~5 minutes of CPU
// on start-ups alone. So CTest runs each GoogleTest suite of these programs
// in one process, its cases in turn, as GoogleTest runs them anywhere
// else; each still starts at the same seed (seed_each_test.cpp). A failure
// names its case in GoogleTest's output, which CTest prints. What CTest
// cannot do with a suite is mark it skipped from GoogleTest's own lines: a
// "[  SKIPPED ]" line is there whenever one case skipped, even beside a
// failure. So the program prints kAllSkippedLine only when no case passed
// or failed. The GPU tests keep one process per test
// (ONE_PROCESS_PER_TEST): there a crash in one case must not hide the others.
#include <gtest/gtest.h>

#include <cstdio>

#include "test_support.h"

namespace {

class ReportAllSkipped : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    if (unit.skipped_test_count() > 0 && unit.successful_test_count() == 0 &&
        unit.failed_test_count() == 0) {
      std::printf("%s\n", dtrain::testing::kAllSkippedLine);
      std::fflush(stdout);
    }
  }
};

// Registered before main() runs the tests; GoogleTest owns the listener.
const bool g_registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ReportAllSkipped);
  return true;
}();

}  // namespace
