// GradScaler's state machine on CPU: scaling, unscaling, skipped steps,
// growth and backoff, the extensions (hysteresis, min/max), call-order
// errors, the disabled pass-through and checkpoint round trips. (Parity with
// torch.amp itself: tests/python/test_grad_scaler_parity.py.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "test_support.h"

namespace {

namespace amp = dtrain::amp;
using dtrain::testing::expect_error;
constexpr float kInf = std::numeric_limits<float>::infinity();

// One parameter [1, 2, 3, 4] under plain SGD with lr 1: p -= grad.
struct Problem {
  at::Tensor param = at::arange(1, 5, at::kFloat).set_requires_grad(true);
  torch::optim::SGD optimizer{{param}, torch::optim::SGDOptions(1.0)};

  // Puts grad * scale on the parameter, as backward of a scaled loss would.
  void set_scaled_grad(float grad, double scale) {
    param.mutable_grad() = at::full({4}, grad, at::kFloat) * static_cast<float>(scale);
  }
  // One iteration: "backward" with `grad` (inf/NaN allowed), step, update.
  bool iterate(amp::GradScaler& scaler, float grad) {
    scaler.scale(at::ones({}));
    set_scaled_grad(grad, scaler.get_scale());
    const bool stepped = scaler.step(optimizer);
    scaler.update();
    return stepped;
  }
};

TEST(GradScaler, TorchAmpDefaults) {
  const amp::GradScalerOptions options;
  EXPECT_EQ(options.init_scale(), 65536.0);
  EXPECT_EQ(options.growth_factor(), 2.0);
  EXPECT_EQ(options.backoff_factor(), 0.5);
  EXPECT_EQ(options.growth_interval(), 2000);
  EXPECT_TRUE(options.enabled());
  amp::GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(GradScaler, ScalesTheLossAndUnscalesTheGradients) {
  amp::GradScaler scaler;
  Problem problem;
  const at::Tensor scaled = scaler.scale(at::full({}, 3.0f));
  EXPECT_EQ(scaled.item<float>(), 3.0f * 65536.0f);
  problem.set_scaled_grad(0.25f, 65536.0);
  scaler.unscale_(problem.optimizer);
  EXPECT_TRUE(at::equal(problem.param.grad(), at::full({4}, 0.25f)));
  EXPECT_TRUE(scaler.step(problem.optimizer));
  EXPECT_TRUE(at::equal(problem.param.detach(), at::arange(1, 5, at::kFloat) - 0.25f));
  scaler.update();
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  amp::GradScaler scaler(amp::GradScalerOptions().growth_interval(3));
  Problem problem;
  std::vector<double> scales;
  std::vector<int64_t> trackers;
  for (int i = 0; i < 7; ++i) {
    EXPECT_TRUE(problem.iterate(scaler, 0.01f));
    scales.push_back(scaler.get_scale());
    trackers.push_back(scaler.growth_tracker());
  }
  const double s = 65536.0;
  EXPECT_EQ(scales, (std::vector<double>{s, s, 2 * s, 2 * s, 2 * s, 4 * s, 4 * s}));
  EXPECT_EQ(trackers, (std::vector<int64_t>{1, 2, 0, 1, 2, 0, 1}));
}

TEST(GradScaler, InfOrNanSkipsTheStepAndBacksOff) {
  amp::GradScaler scaler(amp::GradScalerOptions().growth_interval(3));
  Problem problem;
  EXPECT_TRUE(problem.iterate(scaler, 0.5f));
  EXPECT_EQ(scaler.growth_tracker(), 1);
  const at::Tensor before = problem.param.detach().clone();
  EXPECT_FALSE(problem.iterate(scaler, kInf));
  EXPECT_TRUE(at::equal(problem.param.detach(), before)) << "a skipped step moved the parameter";
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_FALSE(problem.iterate(scaler, std::nanf("")));
  EXPECT_EQ(scaler.get_scale(), 16384.0);
  EXPECT_TRUE(problem.iterate(scaler, 0.5f));
  EXPECT_EQ(scaler.get_scale(), 16384.0);
}

// A gradient finite before scaling overflows float16 once scaled: the
// overflow is in the scaled value, which is what the scaler checks.
TEST(GradScaler, OverflowOfTheScaledGradientIsAnInf) {
  amp::GradScaler scaler;
  Problem problem;
  scaler.scale(at::ones({}));
  problem.param.mutable_grad() = (at::full({4}, 2.0f) * 65536.0f).to(at::kHalf).to(at::kFloat);
  EXPECT_FALSE(scaler.step(problem.optimizer));
}

TEST(GradScaler, HysteresisToleratesOverflowsUntilTheScaleGrows) {
  amp::GradScaler scaler(amp::GradScalerOptions().hysteresis(3).growth_interval(2));
  Problem problem;
  const double s = 65536.0;
  // Overflows 1 and 2 skip their steps but keep the scale; the 3rd and 4th back off.
  for (double expected : {s, s, s / 2, s / 4}) {
    EXPECT_FALSE(problem.iterate(scaler, kInf));
    EXPECT_EQ(scaler.get_scale(), expected);
  }
  EXPECT_EQ(scaler.state_dict()->hysteresis_tracker, 0);
  // Growth refills the allowance: two clean steps grow, then two overflows are free again.
  EXPECT_TRUE(problem.iterate(scaler, 0.1f));
  EXPECT_TRUE(problem.iterate(scaler, 0.1f));
  EXPECT_EQ(scaler.get_scale(), s / 2);
  EXPECT_EQ(scaler.state_dict()->hysteresis_tracker, 3);
  EXPECT_FALSE(problem.iterate(scaler, kInf));
  EXPECT_FALSE(problem.iterate(scaler, kInf));
  EXPECT_EQ(scaler.get_scale(), s / 2);
  EXPECT_FALSE(problem.iterate(scaler, kInf));
  EXPECT_EQ(scaler.get_scale(), s / 4);
}

TEST(GradScaler, MinAndMaxBoundTheScale) {
  amp::GradScaler low(amp::GradScalerOptions().min_scale(20000.0));
  Problem a;
  a.iterate(low, kInf);
  EXPECT_EQ(low.get_scale(), 32768.0);
  a.iterate(low, kInf);
  EXPECT_EQ(low.get_scale(), 20000.0);
  a.iterate(low, kInf);
  EXPECT_EQ(low.get_scale(), 20000.0);

  amp::GradScaler high(amp::GradScalerOptions().growth_interval(1).max_scale(200000.0));
  Problem b;
  b.iterate(high, 0.1f);
  EXPECT_EQ(high.get_scale(), 131072.0);
  b.iterate(high, 0.1f);
  EXPECT_EQ(high.get_scale(), 200000.0);
  b.iterate(high, 0.1f);
  EXPECT_EQ(high.get_scale(), 200000.0);
}

// With neutral extensions (max_scale = inf) update() takes the host path
// (next_scale_state); it must agree with LibTorch's fused kernel step by
// step, including growth that would overflow float32.
TEST(GradScaler, HostStateMachineMatchesTheFusedKernel) {
  for (double init : {65536.0, 1.5e38}) {
    amp::GradScaler fused(amp::GradScalerOptions().init_scale(init).growth_interval(3));
    amp::GradScaler host(amp::GradScalerOptions().init_scale(init).growth_interval(3).max_scale(
        std::numeric_limits<double>::infinity()));
    Problem p1;
    Problem p2;
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) {
      const float grad = rng() % 5 == 0 ? kInf : 0.001f;
      EXPECT_EQ(p1.iterate(fused, grad), p2.iterate(host, grad)) << "step " << i;
      ASSERT_EQ(fused.get_scale(), host.get_scale()) << "step " << i << " init " << init;
      ASSERT_EQ(fused.growth_tracker(), host.growth_tracker()) << "step " << i;
    }
  }
}

TEST(GradScaler, NextScaleStateIsThePureRule) {
  const amp::ScaleRules rules{.growth_interval = 2};
  amp::ScaleState s{.scale = 8.0f, .growth_tracker = 0, .hysteresis_tracker = 1};
  s = amp::next_scale_state(s, false, rules);
  EXPECT_EQ(s, (amp::ScaleState{8.0f, 1, 1}));
  s = amp::next_scale_state(s, false, rules);
  EXPECT_EQ(s, (amp::ScaleState{16.0f, 0, 1}));
  s = amp::next_scale_state(s, true, rules);
  EXPECT_EQ(s, (amp::ScaleState{8.0f, 0, 0}));
  EXPECT_TRUE(rules.is_torch_default());
  EXPECT_FALSE((amp::ScaleRules{.hysteresis = 2}).is_torch_default());
}

TEST(GradScaler, EachOptimizerSkipsOnItsOwnGradientsAndUpdateSeesAll) {
  amp::GradScaler scaler;
  Problem bad;
  Problem good;
  scaler.scale(at::ones({}));
  bad.set_scaled_grad(kInf, scaler.get_scale());
  good.set_scaled_grad(1.0f, scaler.get_scale());
  EXPECT_FALSE(scaler.step(bad.optimizer));
  EXPECT_TRUE(scaler.step(good.optimizer));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32768.0);
}

TEST(GradScaler, CallsOutOfOrderThrow) {
  {
    amp::GradScaler scaler;
    Problem p;
    expect_error([&] { scaler.unscale_(p.optimizer); }, "call scale(loss)");
    expect_error([&] { scaler.update(); }, "call scale(loss)");
  }
  amp::GradScaler scaler;
  Problem p;
  scaler.scale(at::ones({}));
  p.set_scaled_grad(1.0f, scaler.get_scale());
  expect_error([&] { scaler.update(); }, "no inf checks were recorded");
  scaler.unscale_(p.optimizer);
  expect_error([&] { scaler.unscale_(p.optimizer); }, "already called for this optimizer");
  scaler.step(p.optimizer);
  expect_error([&] { scaler.step(p.optimizer); }, "step: already called");
  expect_error([&] { scaler.unscale_(p.optimizer); }, "called after step()");
  scaler.update();
  // The next iteration starts clean.
  p.set_scaled_grad(1.0f, scaler.get_scale());
  EXPECT_TRUE(scaler.step(p.optimizer));
  scaler.update();
}

TEST(GradScaler, RejectsFloat16GradientsAndMissingGradients) {
  amp::GradScaler scaler;
  at::Tensor half = at::ones({2}, at::kHalf).set_requires_grad(true);
  torch::optim::SGD optimizer({half}, torch::optim::SGDOptions(0.1));
  scaler.scale(at::ones({}));
  expect_error([&] { scaler.step(optimizer); }, "no parameter of this optimizer has a gradient");
  amp::GradScaler again;
  again.scale(at::ones({}));
  half.mutable_grad() = at::ones({2}, at::kHalf);
  expect_error([&] { again.step(optimizer); }, "gradient is float16");
}

TEST(GradScaler, DisabledIsAPassThrough) {
  amp::GradScaler scaler(amp::GradScalerOptions().enabled(false));
  Problem p;
  const at::Tensor loss = at::full({}, 3.0f);
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  p.param.mutable_grad() = at::full({4}, kInf);
  EXPECT_TRUE(scaler.step(p.optimizer));  // steps even on inf: nothing checks
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_FALSE(scaler.state_dict().has_value());
}

TEST(GradScaler, OptionsAreChecked) {
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().growth_factor(1.0)); },
               "growth_factor must be > 1, got 1");
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().backoff_factor(1.5)); },
               "backoff_factor must be in (0, 1), got 1.5");
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().growth_interval(0)); },
               "growth_interval must be in [1, 2^31), got 0");
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().init_scale(-1)); },
               "init_scale must be a normal float32 value");
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().hysteresis(0)); },
               "hysteresis must be >= 1, got 0");
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().max_scale(10.0)); },
               "max_scale must be >= init_scale = 65536, got 10");
}

// The scale is a float32 tensor: a scale that rounds to 0 there (or to a
// denormal, whose inverse is inf) would turn finite gradients into NaN that
// no inf check sees, and one above float32's range would overflow.
TEST(GradScaler, ScalesOutsideFloat32AreRefused) {
  for (const double bad : {1e-50, 1e-39, 1e39, std::numeric_limits<double>::infinity(), 0.0}) {
    SCOPED_TRACE(bad);
    expect_error([&] { amp::GradScaler(amp::GradScalerOptions().init_scale(bad)); },
                 "init_scale must be a normal float32 value, in [");
    if (bad < 1) {  // (above init_scale, min_scale is refused for that)
      expect_error([&] { amp::GradScaler(amp::GradScalerOptions().init_scale(1).min_scale(bad)); },
                   "min_scale must be a normal float32 value");
    }
    amp::GradScaler scaler;
    expect_error([&] { scaler.load_state_dict({.scale = bad}); }, "init_scale must be a normal");
    EXPECT_EQ(scaler.get_scale(), 65536.0) << "a refused state left the scaler unchanged";
    Problem p;
    scaler.scale(at::ones({}));
    p.set_scaled_grad(0.001f, scaler.get_scale());
    scaler.step(p.optimizer);
    expect_error([&] { scaler.update(bad); }, "new_scale must be a normal float32 value");
  }
  // float32's extremes themselves are fine.
  amp::GradScaler tiny(amp::GradScalerOptions().init_scale(std::numeric_limits<float>::min()));
  EXPECT_EQ(tiny.get_scale(), static_cast<double>(std::numeric_limits<float>::min()));
}

// Runs `steps` iterations with an overflow every 4th step; returns the scales seen.
std::vector<double> continue_run(amp::GradScaler& scaler, Problem& p, int steps) {
  std::vector<double> scales;
  for (int i = 1; i <= steps; ++i) {
    p.iterate(scaler, i % 4 == 0 ? kInf : 0.001f);
    scales.push_back(scaler.get_scale());
  }
  return scales;
}

TEST(GradScaler, StateRoundTripsThroughStateDictAndArchive) {
  const auto options = amp::GradScalerOptions().growth_interval(3).hysteresis(2);
  amp::GradScaler original(options);
  Problem p;
  continue_run(original, p, 9);
  const amp::GradScalerState saved = *original.state_dict();
  EXPECT_EQ(saved.growth_interval, 3);

  dtrain::testing::TempDir dir;
  {
    torch::serialize::OutputArchive archive;
    original.save(archive);
    archive.save_to(dir.file("scaler.pt"));
  }
  amp::GradScaler from_dict(options);
  from_dict.load_state_dict(saved);
  amp::GradScaler from_file(options);
  {
    torch::serialize::InputArchive archive;
    archive.load_from(dir.file("scaler.pt"));
    from_file.load(archive);
  }
  for (auto* restored : {&from_dict, &from_file}) {
    EXPECT_EQ(restored->get_scale(), saved.scale);
    EXPECT_EQ(restored->growth_tracker(), saved.growth_tracker);
    EXPECT_EQ(restored->state_dict()->hysteresis_tracker, saved.hysteresis_tracker);
  }
  // The restored scalers continue exactly as the original does.
  Problem p2, p3;
  const auto expected = continue_run(original, p, 12);
  EXPECT_EQ(continue_run(from_dict, p2, 12), expected);
  EXPECT_EQ(continue_run(from_file, p3, 12), expected);
}

// As torch.amp's state_dict() is {} when disabled: a checkpoint loop saves
// and loads a disabled scaler without asking; an enabled one refuses what a
// disabled one wrote, saying why.
TEST(GradScaler, ADisabledScalerSavesNothing) {
  amp::GradScaler disabled(amp::GradScalerOptions().enabled(false));
  dtrain::testing::TempDir dir;
  {
    torch::serialize::OutputArchive archive;
    disabled.save(archive);
    archive.save_to(dir.file("disabled.pt"));
  }
  torch::serialize::InputArchive archive;
  archive.load_from(dir.file("disabled.pt"));
  EXPECT_TRUE(archive.keys().empty());
  disabled.load(archive);
  amp::GradScaler enabled;
  expect_error([&] { enabled.load(archive); }, "possibly because it was saved from a disabled");
}

TEST(GradScaler, LoadRejectsBadState) {
  amp::GradScaler scaler;
  expect_error([&] { scaler.load_state_dict({.scale = -2.0}); }, "init_scale must be a normal");
  expect_error([&] { scaler.load_state_dict({.growth_interval = 5, .growth_tracker = 5}); },
               "growth_tracker must be in [0, growth_interval = 5), got 5");
  torch::serialize::OutputArchive empty;
  dtrain::testing::TempDir dir;
  empty.save_to(dir.file("empty.pt"));
  torch::serialize::InputArchive archive;
  archive.load_from(dir.file("empty.pt"));
  expect_error([&] { scaler.load(archive); },
               "the archive holds no GradScaler state (no key 'scale'), possibly because it was "
               "saved from a disabled GradScaler");

  // Values of the wrong kind are named, not left to fail inside c10::IValue.
  auto saved_with = [&](const char* key, const c10::IValue& value) {
    const std::vector<std::pair<const char*, c10::IValue>> good = {
        {"scale", c10::IValue(1024.0)},
        {"growth_factor", c10::IValue(2.0)},
        {"backoff_factor", c10::IValue(0.5)},
        {"growth_interval", c10::IValue(int64_t{2000})},
        {"_growth_tracker", c10::IValue(int64_t{0})},
        {"hysteresis_tracker", c10::IValue(int64_t{1})}};
    torch::serialize::OutputArchive out;
    for (const auto& [name, good_value] : good) {
      out.write(name, std::string(name) == key ? value : good_value);
    }
    const std::string path = dir.file(std::string(key) + ".pt");
    out.save_to(path);
    auto in = std::make_unique<torch::serialize::InputArchive>();
    in->load_from(path);
    return in;
  };
  expect_error([&] { scaler.load(*saved_with("scale", c10::IValue(at::ones({1})))); },
               "'scale' must be a number, got a Tensor");
  expect_error([&] { scaler.load(*saved_with("growth_interval", c10::IValue(2.5))); },
               "'growth_interval' must be an integer, got a Double");
  // An integer scale is a number all the same.
  scaler.load(*saved_with("scale", c10::IValue(int64_t{1024})));
  EXPECT_EQ(scaler.get_scale(), 1024.0);
}

}  // namespace
