// support/seed_each_test.cpp: every test starts with LibTorch's default CPU
// generator at dtrain::testing::kTestSeed, whatever earlier tests drew.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "test_support.h"

namespace {

// The draws a generator at the test seed gives first.
at::Tensor first_draws_at_the_test_seed() {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(dtrain::testing::kTestSeed);
  return at::rand({8}, generator);
}

// Two tests, so that whichever runs second (in one process, as a plain run
// of the program runs them) starts after the other's draws.
TEST(SeedEachTest, TheFirstTestStartsAtTheTestSeed) {
  EXPECT_TRUE(at::equal(at::rand({8}), first_draws_at_the_test_seed()));
  (void)at::randn({100});
}

TEST(SeedEachTest, TheNextTestStartsThereAgain) {
  EXPECT_TRUE(at::equal(at::rand({8}), first_draws_at_the_test_seed()));
  (void)at::randn({100});
}

}  // namespace
