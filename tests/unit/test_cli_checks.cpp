// The command-line frame: numeric checks that say what was expected in
// plain words, and errors printed on one line without LibTorch's C++ stack.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/job_rank.h"

namespace {

// Parses `value` for one option checked by `check`; returns CLI11's error ("" when accepted).
std::string parse_error(const CLI::Validator& check, const std::string& value) {
  CLI::App app{"test", "test"};
  double number = 0;
  app.add_option("--value", number)->check(check);
  try {
    app.parse(std::vector<std::string>{value, "--value"});  // CLI11 takes them reversed
    return "";
  } catch (const CLI::ParseError& error) {
    return error.what();
  }
}

TEST(CliChecks, PositiveNamesTheValue) {
  EXPECT_EQ(parse_error(dtrain::util::positive(), "0.5"), "");
  EXPECT_EQ(parse_error(dtrain::util::positive(), "0"), "--value: must be positive, got 0");
  EXPECT_EQ(parse_error(dtrain::util::positive(), "-3"), "--value: must be positive, got -3");
  EXPECT_EQ(parse_error(dtrain::util::positive(), "abc"), "--value: must be a number, got 'abc'");
  EXPECT_EQ(parse_error(dtrain::util::positive(), "2x"), "--value: must be a number, got '2x'");
}

TEST(CliChecks, NonNegativeAcceptsZero) {
  EXPECT_EQ(parse_error(dtrain::util::non_negative(), "0"), "");
  EXPECT_EQ(parse_error(dtrain::util::non_negative(), "-1"), "--value: must be >= 0, got -1");
}

TEST(CliChecks, UnsignedIntegerRefusesWhatWouldWrapOrSaturate) {
  const auto check = dtrain::util::unsigned_integer();
  EXPECT_EQ(parse_error(check, "0"), "");
  EXPECT_EQ(parse_error(check, "18446744073709551615"), "");
  EXPECT_EQ(parse_error(check, "-1"), "--value: must be a whole number >= 0, got '-1'");
  EXPECT_EQ(parse_error(check, "1.5"), "--value: must be a whole number >= 0, got '1.5'");
  EXPECT_EQ(parse_error(check, "18446744073709551616"),
            "--value: must be below 2^64 (18446744073709551616), got 18446744073709551616");
}

// What run_cli_app prints for a body that throws `message`.
std::string printed_error(const std::string& message) {
  CLI::App app{"test", "frame_test"};
  char name[] = "frame_test";
  char* argv[] = {name};
  testing::internal::CaptureStderr();
  const int code =
      dtrain::util::run_cli_app(app, 1, argv, [&]() -> int { throw std::runtime_error(message); });
  EXPECT_EQ(code, 1);
  return testing::internal::GetCapturedStderr();
}

// What run_cli_app prints for `flag value` given to a program whose one
// option is --epochs; its exit status must be 2.
std::string printed_flag_error(std::string flag, std::string value) {
  CLI::App app{"test", "frame_test"};
  int epochs = 1;
  app.add_option("--epochs", epochs);
  std::string name = "frame_test";
  char* argv[] = {name.data(), flag.data(), value.data()};
  testing::internal::CaptureStderr();
  EXPECT_EQ(dtrain::util::run_cli_app(app, 3, argv, [] { return 0; }), 2);
  return testing::internal::GetCapturedStderr();
}

TEST(CliApp, ErrorsNameTheRankOnceAProcessGroupSetIt) {
  dtrain::util::set_job_rank(std::nullopt);
  EXPECT_EQ(printed_error("no group yet"), "frame_test: error: no group yet\n");
  dtrain::util::set_job_rank(3);
  EXPECT_EQ(printed_error("the gradients hold NaN"),
            "frame_test (rank 3): error: the gradients hold NaN\n");
  dtrain::util::set_job_rank(0);
  EXPECT_EQ(printed_error("x"), "frame_test (rank 0): error: x\n");
  // A bad flag too.
  const std::string bad_flag = printed_flag_error("--epochs", "three");
  EXPECT_EQ(bad_flag.rfind("frame_test (rank 0): error: ", 0), 0u) << bad_flag;
  EXPECT_NE(bad_flag.find("; see frame_test --help"), std::string::npos) << bad_flag;
  dtrain::util::set_job_rank(std::nullopt);
}

TEST(CliApp, ErrorsAreOneLineWithoutLibTorchsStack) {
  dtrain::util::set_job_rank(std::nullopt);
  EXPECT_EQ(printed_error("two\nlines"), "frame_test: error: two lines\n");
  // c10::Error's what(): the message, then where it was raised and the frames.
  EXPECT_EQ(printed_error("Expected more than 1 value per channel\nException raised from "
                          "batch_norm at batchnorm.h:31 (most recent call first):\nframe #0: x"),
            "frame_test: error: Expected more than 1 value per channel\n");
}

// Arguments no option takes are listed in the order they were given, with
// the flag a misspelt one probably meant; a word far from every flag gets
// no guess.
TEST(CliApp, UnexpectedArgumentsInTheirOrder) {
  dtrain::util::set_job_rank(std::nullopt);
  EXPECT_EQ(printed_flag_error("--epoch", "3"),
            "frame_test: error: unexpected argument(s): --epoch 3; did you mean --epochs?; see "
            "frame_test --help\n");
  EXPECT_EQ(
      printed_flag_error("--learning-rate", "3"),
      "frame_test: error: unexpected argument(s): --learning-rate 3; see frame_test --help\n");
}

}  // namespace
