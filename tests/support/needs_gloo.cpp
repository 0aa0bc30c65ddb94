// Compiled into each test program whose tests start Gloo groups (NEEDS_GLOO
// in tests/CMakeLists.txt). In a build with AddressSanitizer the SDK cannot
// load its Gloo module (sdk/src/dist/gloo/gloo_library.cpp), so the whole
// program skips, saying why, rather than failing test by test
// (scripts/sanitize.sh runs these programs under UBSan alone).
#include <gtest/gtest.h>

#include <cstdio>

#include "test_support.h"

namespace {

class NeedsGloo : public ::testing::Environment {
 public:
  void SetUp() override {
#if defined(__SANITIZE_ADDRESS__)
    // GoogleTest 1.12 reports tests that a global environment skipped as
    // passed and prints no "[  SKIPPED ]" line, so this prints the lines
    // that CTest's SKIP_REGULAR_EXPRESSION for these programs looks for
    // (one test per case, or per suite: cmake/GTestSuites.cmake): the tests
    // show as skipped, not as passed.
    std::printf("[  SKIPPED ] %s\n%s\n", kReason, dtrain::testing::kAllSkippedLine);
    std::fflush(stdout);
    GTEST_SKIP() << kReason;
#endif
  }

 private:
  static constexpr const char* kReason =
      "this program's tests use the gloo backend, which cannot be loaded under "
      "AddressSanitizer (bash scripts/sanitize.sh undefined runs them)";
};

[[maybe_unused]] ::testing::Environment* const needs_gloo_environment =
    ::testing::AddGlobalTestEnvironment(new NeedsGloo);

}  // namespace
