// The Trainer's typed options and their flags: one FlagTable declares each
// flag with its parse and whether every process must be given it alike,
// and the settings compared across ranks and the advice come from it; enum
// flags take their words; bad values and combinations are named as bad
// flags; the learning-rate schedules and scaling.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dtrain/train/flag_table.h"
#include "dtrain/train/lr_schedule.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/train/trainer_options.h"
#include "dtrain/util/errors.h"
#include "parse_flags.h"

namespace {

using dtrain::testing::parse_flags;
using dtrain::train::Agreement;
using dtrain::train::FlagTable;
using dtrain::train::LrSchedule;
using dtrain::train::Precision;
using dtrain::train::TrainerOptions;

// The message CLI11 gives for `args`, or "" when they parse.
std::string trainer_flags_error(std::vector<std::string> args) {
  CLI::App app;
  TrainerOptions options;
  FlagTable flags(app);
  dtrain::train::add_trainer_flags(flags, options);
  try {
    parse_flags(app, std::move(args));
  } catch (const CLI::ParseError& error) {
    return error.what();
  }
  return "";
}

// "--epochs=20", ...: the settings the processes compare, as parsed.
std::vector<std::string> compared_settings(const FlagTable& flags) {
  std::vector<std::string> compared;
  for (const auto& setting : flags.same_settings()) {
    compared.push_back(setting.name + "=" + setting.value);
  }
  return compared;
}

TEST(FlagTable, ComparedSettingsAndAdviceComeFromTheTable) {
  CLI::App app;
  FlagTable flags(app);
  int epochs = 5;
  int threads = 0;
  std::string path;
  bool augment = true;
  int rank = -1;
  flags.add("--epochs", epochs, "", Agreement::same());
  flags.add("--threads", threads, "", Agreement::may_differ());
  flags.add("--checkpoint", path, "",
            Agreement::partly([&path] { return path.empty() ? "not given" : "given"; },
                              "--checkpoint's path"));
  flags.add_switch("--augment,!--no-augment", augment, "", Agreement::same());
  flags.add("--rank", rank, "", Agreement::not_compared());
  flags.advise("give each the same data");
  parse_flags(app, {"--epochs", "2", "--epochs", "3", "--threads", "4", "--checkpoint", "c.pt",
                    "--no-augment", "--rank", "1"});
  EXPECT_EQ(epochs, 3) << "a flag given twice takes its last value";
  const std::vector<dtrain::dist::Setting> settings = flags.same_settings();
  ASSERT_EQ(settings.size(), 3u);
  EXPECT_EQ(settings[0].name, "--epochs");
  EXPECT_EQ(settings[0].value, "3");
  EXPECT_EQ(settings[1].name, "--checkpoint");
  EXPECT_EQ(settings[1].value, "given");
  EXPECT_EQ(settings[2].name, "--augment");
  EXPECT_EQ(settings[2].value, "false");
  EXPECT_EQ(flags.advice(),
            "Start every process with the same flags (only --threads and --checkpoint's path may "
            "differ), and give each the same data");
}

TEST(FlagTable, ChoicesAndTextsAreTypedAndBadOnesNamed) {
  CLI::App app;
  FlagTable flags(app);
  Precision precision = Precision::kFp32;
  dtrain::train::RankWeights weights;
  flags.add_choice("--amp", precision, dtrain::train::precision_words(), "", Agreement::same());
  flags.add_text(
      "--rank-weights", weights, dtrain::train::parse_rank_weights,
      [](const dtrain::train::RankWeights& w) { return dtrain::train::to_string(w); }, "",
      Agreement::same());
  parse_flags(app, {"--amp", "bf16", "--rank-weights", "3,1"});
  EXPECT_EQ(precision, Precision::kBf16);
  EXPECT_EQ(weights, dtrain::train::RankWeights::of({3, 1}));
  EXPECT_EQ(flags.same_settings()[0].value, "bf16");
  EXPECT_EQ(flags.same_settings()[1].value, "3,1");
  try {
    parse_flags(app, {"--amp", "fp8"});
    FAIL() << "--amp fp8 was taken";
  } catch (const CLI::ParseError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("--amp"), std::string::npos) << what;
    EXPECT_NE(what.find("fp8"), std::string::npos) << what;
    EXPECT_NE(what.find("bf16"), std::string::npos) << what;
  }
}

TEST(FlagTable, CombinationsAreCheckedOnceEveryFlagIsParsed) {
  CLI::App app;
  FlagTable flags(app);
  int low = 0;
  int high = 10;
  flags.add("--low", low, "", Agreement::same());
  flags.add("--high", high, "", Agreement::same());
  std::vector<std::string> order;
  flags.check([&] { order.push_back("first"); });
  flags.check([&] {
    order.push_back("second");
    if (low > high) {
      throw CLI::ValidationError("--low " + std::to_string(low), "must not exceed --high");
    }
  });
  parse_flags(app, {"--high", "3", "--low", "2"});
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
  try {
    parse_flags(app, {"--low", "5", "--high", "3"});
    FAIL() << "--low above --high was taken";
  } catch (const CLI::ValidationError& error) {
    EXPECT_EQ(std::string(error.what()), "--low 5: must not exceed --high");
  }
}

TEST(TrainerFlags, ParseIntoTypedOptions) {
  CLI::App app;
  TrainerOptions options = TrainerOptions().epochs(20).noun("clouds");
  FlagTable flags(app);
  dtrain::train::add_trainer_flags(flags, options);
  parse_flags(app, {"--amp",
                    "bf16",
                    "--device",
                    "cpu",
                    "--backend",
                    "gloo",
                    "--lr-scaling",
                    "none",
                    "--rank-weights",
                    "auto",
                    "--checkpoint",
                    "run.pt",
                    "--resume",
                    "--tensorboard",
                    "runs/a",
                    "--trace",
                    "out/trace.json",
                    "--trace-steps",
                    "5",
                    "--init-weights",
                    "from_python.pt",
                    "--init-weights-entry",
                    "model",
                    "--init-weights-partial",
                    "--export-weights",
                    "out/weights.pt"});
  EXPECT_EQ(options.epochs(), 20) << "the program's default stays";
  EXPECT_EQ(options.precision(), Precision::kBf16);
  EXPECT_EQ(options.backend(), dtrain::train::Backend::kGloo);
  EXPECT_EQ(options.lr_scaling(), dtrain::train::LrScaling::kNone);
  EXPECT_EQ(options.rank_weights(), dtrain::train::RankWeights::automatic());
  EXPECT_EQ(options.checkpoint(), "run.pt");
  EXPECT_TRUE(options.resume());
  EXPECT_EQ(options.tensorboard(), "runs/a");
  EXPECT_EQ(options.trace(), "out/trace.json");
  EXPECT_EQ(options.trace_steps(), 5);
  EXPECT_EQ(options.init_weights(), "from_python.pt");
  EXPECT_EQ(options.init_weights_entry(), "model");
  EXPECT_TRUE(options.init_weights_partial());
  EXPECT_EQ(options.export_weights(), "out/weights.pt");
  EXPECT_EQ(compared_settings(flags).front(), "--epochs=20");
}

// Every flag that must agree across processes, as parsed above, and the
// advice naming those that may differ.
TEST(TrainerFlags, ComparedSettingsNameEveryFlagThatMustAgree) {
  CLI::App app;
  TrainerOptions options = TrainerOptions().epochs(20).noun("clouds");
  FlagTable flags(app);
  dtrain::train::add_trainer_flags(flags, options);
  parse_flags(app, {"--amp", "bf16", "--backend", "gloo", "--lr-scaling", "none", "--rank-weights",
                    "auto", "--checkpoint", "run.pt", "--trace", "out/trace.json", "--init-weights",
                    "from_python.pt", "--init-weights-entry", "model", "--init-weights-partial"});
  EXPECT_EQ(compared_settings(flags), (std::vector<std::string>{"--epochs=20",
                                                                "--batch-size=64",
                                                                "--lr=0.01",
                                                                "--lr-scaling=none",
                                                                "--seed=0",
                                                                "--trace=given",
                                                                "--amp=bf16",
                                                                "--device=cpu",
                                                                "--backend=gloo",
                                                                "--checkpoint=given",
                                                                "--checkpoint-steps=0",
                                                                "--init-weights=given",
                                                                "--init-weights-entry=model",
                                                                "--init-weights-partial=true",
                                                                "--rank-weights=auto",
                                                                "--optimizer=adam",
                                                                "--weight-decay=0",
                                                                "--momentum=0",
                                                                "--nesterov=false",
                                                                "--decay-norms-biases=true",
                                                                "--warmup-steps=0",
                                                                "--warmup-start-factor=0.1",
                                                                "--accumulate=1",
                                                                "--clip-grad-norm=0",
                                                                "--find-unused-parameters=false",
                                                                "--static-graph=false",
                                                                "--bucket-cap-mb=25",
                                                                "--first-bucket-mb=1",
                                                                "--gradient-as-bucket-view=false",
                                                                "--broadcast-buffers=true",
                                                                "--comm-hook=none",
                                                                "--best-by=test_accuracy",
                                                                "--best-mode=max",
                                                                "--early-stop-patience=0",
                                                                "--early-stop-min-delta=0"}));
  EXPECT_EQ(flags.advice(),
            "Start every process with the same flags (only --threads, --loader-workers, --csv, "
            "--tensorboard, --trace's path, --trace-steps, --dist-timeout, --checkpoint's path, "
            "--init-weights' path and --export-weights may differ)");
}

TEST(TrainerFlags, BadValuesAndCombinationsAreNamed) {
  EXPECT_EQ(trainer_flags_error({}), "");
  EXPECT_EQ(trainer_flags_error({"--epochs", "0"}), "--epochs: must be positive, got 0");
  EXPECT_EQ(trainer_flags_error({"--trace-steps", "0"}), "--trace-steps: must be positive, got 0");
  EXPECT_EQ(trainer_flags_error({"--amp", "fp16"}),
            "--amp fp16: needs --device cuda (on the CPU use --amp bf16)");
  EXPECT_EQ(trainer_flags_error({"--resume"}),
            "--resume: needs --checkpoint, the file to resume from");
  EXPECT_EQ(trainer_flags_error({"--rank", "1"}),
            "--rank: needs --world-size and --rank together: a process started by hand is told "
            "both (or neither, under a launcher)");
  EXPECT_EQ(trainer_flags_error({"--rank-weights", "0,1"}),
            "--rank-weights: expected equal, auto or one positive number per process, in rank "
            "order, such as 3,1; 0 is not positive and finite (got '0,1')");
  EXPECT_NE(trainer_flags_error({"--rank-weights", "3,1"})
                .find("--rank-weights 3,1: 2 weight(s) for 1 process(es)"),
            std::string::npos);
}

TEST(TrainerOptions, ProblemsOfOptionsSetInCode) {
  EXPECT_FALSE(dtrain::train::option_problem(TrainerOptions()));
  const auto fp16 = dtrain::train::option_problem(TrainerOptions().precision(Precision::kFp16));
  ASSERT_TRUE(fp16);
  EXPECT_EQ(fp16->flag, "--amp fp16");
  const auto steps = dtrain::train::option_problem(TrainerOptions().checkpoint_steps(5));
  ASSERT_TRUE(steps);
  EXPECT_EQ(steps->flag, "--checkpoint-steps 5");
  const auto batch = dtrain::train::option_problem(TrainerOptions().batch_size(0));
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->flag + ": " + batch->message, "--batch-size: must be positive, got 0");
}

TEST(EnumWords, NameEachValueAndReadEachWord) {
  const auto& words = dtrain::train::precision_words();
  EXPECT_EQ(words.word(Precision::kFp32), "off");
  EXPECT_EQ(words.value("fp16"), Precision::kFp16);
  EXPECT_EQ(words.words(), (std::vector<std::string>{"off", "bf16", "fp16"}));
  try {
    words.value("fp8");
    FAIL() << "fp8 was read";
  } catch (const dtrain::Error& error) {
    EXPECT_EQ(std::string(error.what()), "'fp8' is not one of off, bf16, fp16");
  }
}

TEST(LrSchedule, StepMultipliesByTheDecayEveryStepEpochs) {
  const LrSchedule step = LrSchedule::step(0.7, 20);
  const double rate = dtrain::train::scaled_lr(1e-3, dtrain::train::LrScaling::kLinear, 2);
  EXPECT_DOUBLE_EQ(step.at(rate, 1), 2e-3) << "linear scaling: 2 processes, twice the rate";
  EXPECT_DOUBLE_EQ(step.at(rate, 20), 2e-3);
  EXPECT_DOUBLE_EQ(step.at(rate, 21), 2e-3 * 0.7);
  EXPECT_DOUBLE_EQ(step.at(rate, 41), 2e-3 * 0.7 * 0.7);
  EXPECT_EQ(step.description(), "x0.7 every 20 epochs");
  EXPECT_EQ(LrSchedule::constant().at(rate, 7), rate);
  EXPECT_DOUBLE_EQ(dtrain::train::scaled_lr(1e-3, dtrain::train::LrScaling::kNone, 4), 1e-3);
}

TEST(LrSchedule, CosineFallsFromTheFullRateOverTheRunWhateverItsLength) {
  for (int epochs : {1, 5, 20, 250}) {
    const LrSchedule cosine = LrSchedule::cosine(epochs);
    EXPECT_DOUBLE_EQ(cosine.at(1e-3, 1), 1e-3) << epochs << " epochs: the first at the full rate";
    double before = cosine.at(1e-3, 1);
    for (int epoch = 2; epoch <= epochs; ++epoch) {
      const double now = cosine.at(1e-3, epoch);
      EXPECT_LT(now, before) << "epoch " << epoch << " of " << epochs;
      EXPECT_GT(now, 0.0) << "epoch " << epoch << " of " << epochs;
      before = now;
    }
  }
  // Half the rate halfway; 5 epochs: (1 + cos(pi * k / 5)) / 2 for k = 0..4.
  EXPECT_NEAR(LrSchedule::cosine(20).at(1e-3, 11), 0.5e-3, 1e-15);
  EXPECT_NEAR(LrSchedule::cosine(5).at(1e-3, 5), 1e-3 * (1 + std::cos(std::numbers::pi * 0.8)) / 2,
              1e-15);
  EXPECT_EQ(LrSchedule::cosine(5).description(), "down along a cosine over 5 epochs");
  EXPECT_THROW(LrSchedule::cosine(0), dtrain::Error);
  EXPECT_THROW(LrSchedule::step(1.5, 20), dtrain::Error);
}

}  // namespace
