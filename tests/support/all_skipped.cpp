// Linked into every test program that links LibTorch (dtrain_add_gtest):
// a run in which every test skipped says so in one line, which CTest reads
// to show the run as skipped (cmake/GTestSuites.cmake).
//
// CTest runs a suite's cases in one process (Note [One process per test
// suite] in cmake/GTestSuites.cmake) and cannot tell a skipped suite from
// GoogleTest's own lines: a "[  SKIPPED ]" line is there whenever one case
// skipped, even beside a failure. So the program prints kAllSkippedLine
// only when no case passed or failed.
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
