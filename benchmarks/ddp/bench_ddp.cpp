// DDP step time: one training step (zero_grad, forward, cross-entropy,
// backward with the gradient all-reduce, SGD step) of the toy CNN, of a
// PointNet-style MLP with PointNet++'s parameter count (1.46 M), or of
// dtrain's PointNet++ classifier (pointnet2-ssg, pointnet2-msg), timed per
// step. benchmarks/peers/ddp_torch.py is the same under PyTorch's own
// DistributedDataParallel (toycnn, pointmlp); benchmarks/run_ddp.sh runs both
// in lockstep, and benchmarks/run_scaling.sh runs the classifiers at 1-3
// ranks for the scaling model.
//
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 bench_ddp --model toycnn ...
//
// --mode local trains without DDP (the overhead baseline; with WORLD_SIZE > 1
// every rank trains its own model, so the machine carries the same load);
// --mode sync is local with a barrier after every step: the compute of a
// synchronous step, as the scheduler gives it to ranks that wait for each
// other, without gradient traffic (Note [DDP scaling model]);
// --mode ddp wraps the model in DistributedDataParallel over Gloo.
// --lockstep DIR:NAME takes --rounds turns of --steps steps with the other
// participants (Note [Lockstep benchmarks]); alone it runs one round.
// Rank 0 writes one CSV row per round: impl,model,mode,world,batch_per_rank,
// parameters,round,steps,step_ms_median,step_ms_p10,step_ms_p90,
// step_ms_mean,backward_ms_median,hidden_pct (backward_ms: from the loss to
// the end of backward, DDP's wait for the last all-reduce included;
// step_ms_mean: the mean step of the slowest rank, which counts the steps in
// which the scheduler took a process off its core, as happens every few
// steps when ranks outnumber cores: the median hides them). Timings are
// rank 0's otherwise.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <CLI/CLI.hpp>

#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/dist/init.h"
#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/process_setup.h"
#include "lockstep.h"

namespace {

namespace F = torch::nn::functional;

// PointNet's shape with PointNet++ (SSG classification)'s parameter count:
// a shared per-point MLP 3 -> ... -> 1024, max-pool over points, head -> 40.
class PointMlpImpl : public torch::nn::Module {
 public:
  PointMlpImpl() {
    const std::vector<std::int64_t> point = {3, 64, 64, 128, 128, 128, 256, 256, 512, 1024};
    for (std::size_t i = 0; i + 1 < point.size(); ++i) {
      point_mlp_->push_back(torch::nn::Linear(point[i], point[i + 1]));
      point_mlp_->push_back(torch::nn::ReLU());
    }
    const std::vector<std::int64_t> head = {1024, 512, 256, 40};
    for (std::size_t i = 0; i + 1 < head.size(); ++i) {
      head_->push_back(torch::nn::Linear(head[i], head[i + 1]));
      if (i + 2 < head.size()) {
        head_->push_back(torch::nn::ReLU());
      }
    }
    register_module("point_mlp", point_mlp_);
    register_module("head", head_);
  }
  // points: (B, N, 3) -> logits (B, 40)
  at::Tensor forward(const at::Tensor& points) {
    return head_->forward(std::get<0>(point_mlp_->forward(points).max(1)));
  }

 private:
  torch::nn::Sequential point_mlp_;
  torch::nn::Sequential head_;
};
TORCH_MODULE(PointMlp);

struct Options {
  std::string model = "toycnn";
  std::string mode = "ddp";
  std::int64_t batch = 32;
  int steps = 50;
  int warmup = 5;
  int rounds = 1;
  std::string lockstep;
  int points = 512;
  int threads = 1;
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  std::string csv;
};

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[index];
}

struct RoundResult {
  std::vector<double> step_ms;
  std::vector<double> backward_ms;
  double hidden_pct = 0;
  double slowest_mean_ms = 0;  // the largest of the ranks' mean steps
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// One CSV row per round (appended, with a header when the file is new).
void append_rounds_csv(const Options& options, int world, std::int64_t parameters,
                       const std::vector<RoundResult>& results, bool with_ddp) {
  const bool fresh = !std::filesystem::exists(options.csv);
  std::ofstream out(options.csv, std::ios::app);
  if (!out) {
    throw dtrain::IOError("cannot append to '" + options.csv + "'");
  }
  if (fresh) {
    out << "impl,model,mode,world,batch_per_rank,parameters,round,steps,step_ms_median,"
           "step_ms_p10,step_ms_p90,step_ms_mean,backward_ms_median,hidden_pct\n";
  }
  for (std::size_t round = 0; round < results.size(); ++round) {
    const std::vector<double>& ms = results[round].step_ms;
    out << fmt::format("dtrain,{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{}\n",
                       options.model, options.mode, world, options.batch, parameters, round,
                       ms.size(), percentile(ms, 0.5), percentile(ms, 0.1), percentile(ms, 0.9),
                       results[round].slowest_mean_ms, percentile(results[round].backward_ms, 0.5),
                       with_ddp ? fmt::format("{:.1f}", results[round].hidden_pct) : "");
  }
}

// The largest of the ranks' mean steps (a collective: also a barrier).
double slowest_mean_ms(const std::vector<double>& step_ms, int world) {
  const double mean =
      std::accumulate(step_ms.begin(), step_ms.end(), 0.0) / static_cast<double>(step_ms.size());
  if (world == 1) {
    return mean;
  }
  at::Tensor slowest = at::full({1}, mean, at::kDouble);
  dtrain::dist::all_reduce(slowest, dtrain::dist::ReduceOp::kMax);
  return slowest.item<double>();
}

template <typename Holder>
int run(Holder model, const at::Tensor& inputs, const at::Tensor& labels, const Options& options) {
  const bool grouped = dtrain::dist::is_initialized();
  const int world = grouped ? dtrain::dist::get_world_size() : 1;
  const int rank = grouped ? dtrain::dist::get_rank() : 0;
  std::optional<dtrain::ddp::DistributedDataParallel<Holder>> ddp;
  if (options.mode == "ddp") {
    dtrain::ddp::DdpOptions ddp_options;
    ddp_options.bucket_cap_mb = options.bucket_cap_mb;
    ddp_options.first_bucket_mb = options.first_bucket_mb;
    ddp_options.record_timeline = true;
    ddp.emplace(model, ddp_options);
  }
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  // Returns the milliseconds of backward (DDP's wait for the last bucket included).
  auto train_step = [&] {
    optimizer.zero_grad();
    const at::Tensor logits = ddp ? (*ddp)(inputs) : model(inputs);
    const at::Tensor loss = F::cross_entropy(logits, labels);
    const auto backward_start = std::chrono::steady_clock::now();
    loss.backward();
    const double backward_ms = ms_since(backward_start);
    optimizer.step();
    if (options.mode == "sync" && grouped) {
      dtrain::dist::barrier();
    }
    return backward_ms;
  };

  dtrain::bench::Lockstep lockstep(options.lockstep, rank);
  const int rounds = lockstep.active() ? options.rounds : 1;
  std::vector<RoundResult> results;
  for (int round = 0; round < rounds; ++round) {
    lockstep.wait_turn(round);
    if (round == 0) {
      for (int step = 0; step < options.warmup; ++step) {
        train_step();
      }
    }
    if (ddp) {
      ddp->timeline().clear();
    }
    RoundResult result;
    for (int step = 0; step < options.steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      result.backward_ms.push_back(train_step());
      result.step_ms.push_back(ms_since(start));
    }
    if (ddp) {
      result.hidden_pct = 100.0 * ddp->timeline().hidden_fraction();
    }
    result.slowest_mean_ms = slowest_mean_ms(result.step_ms, world);
    lockstep.pass_turn(round);
    results.push_back(std::move(result));
  }

  std::int64_t parameters = 0;
  for (const auto& p : model->parameters()) {
    parameters += p.numel();
  }
  std::vector<double> all_ms;
  for (const RoundResult& result : results) {
    all_ms.insert(all_ms.end(), result.step_ms.begin(), result.step_ms.end());
  }
  const double median = percentile(all_ms, 0.5);
  spdlog::info(
      "{} {} world {} batch {}/rank: {:.2f} ms/step median over {} rounds, {:.0f} "
      "samples/s{}",
      options.model, options.mode, world, options.batch, median, rounds,
      1000.0 * static_cast<double>(options.batch * world) / median,
      ddp ? ", " + ddp->timeline().summary() : std::string());
  if (rank == 0 && !options.csv.empty()) {
    append_rounds_csv(options, world, parameters, results, ddp.has_value());
  }
  return 0;
}

int bench(const Options& options) {
  at::set_num_threads(options.threads);
  // Local and sync modes with several ranks train independent models side by
  // side (the baseline with the same load on the machine); their group keeps
  // the ranks' lockstep turns together, and sync's barriers.
  const int world = dtrain::util::read_launch_env().world_size.value_or(1);
  if (options.mode == "ddp" || world > 1) {
    dtrain::dist::init_process_group({.backend = "gloo"});
  }
  const int rank = dtrain::dist::is_initialized() ? dtrain::dist::get_rank() : 0;
  // Every rank sees its own data; the model starts equal (DDP broadcasts).
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1000 + rank);
  at::manual_seed(0);
  if (options.model == "toycnn") {
    const at::Tensor inputs = at::randn({options.batch, 1, 32, 32}, generator);
    const at::Tensor labels = at::randint(10, {options.batch}, generator);
    return run(dtrain::models::ToyCnn(dtrain::models::ToyCnnOptions().in_channels(1)), inputs,
               labels, options);
  }
  const at::Tensor labels = at::randint(40, {options.batch}, generator);
  if (options.model == "pointmlp") {
    const at::Tensor inputs = at::randn({options.batch, options.points, 3}, generator);
    return run(PointMlp(), inputs, labels, options);
  }
  // pointnet2-<preset>: clouds uniform in [-1, 1]^3, as bench_pointnet2_train's.
  const at::Tensor inputs = at::rand({options.batch, options.points, 3}, generator) * 2 - 1;
  const std::string preset = options.model.substr(std::string("pointnet2-").size());
  return run(dtrain::models::PointNet2Cls(dtrain::models::pointnet2_cls_preset(preset, 40)), inputs,
             labels, options);
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"DDP step time of the toy CNN, a PointNet++-sized MLP or PointNet++ (CPU, Gloo)",
               "bench_ddp"};
  Options options;
  app.add_option("--model", options.model)
      ->check(CLI::IsMember(
          {"toycnn", "pointmlp", "pointnet2-ssg", "pointnet2-msg", "pointnet2-ssg-lite"}));
  app.add_option("--mode", options.mode)->check(CLI::IsMember({"local", "ddp", "sync"}));
  app.add_option("--batch", options.batch, "Samples per rank and step")
      ->check(dtrain::util::positive());
  app.add_option("--steps", options.steps, "Timed steps per round")
      ->check(dtrain::util::positive());
  app.add_option("--rounds", options.rounds, "Turns taken under --lockstep")
      ->check(dtrain::util::positive());
  app.add_option("--lockstep", options.lockstep,
                 "DIR:NAME: take turns with other benchmark processes (see lockstep.h)");
  app.add_option("--warmup", options.warmup, "Untimed first steps")
      ->check(dtrain::util::non_negative());
  app.add_option("--points", options.points, "Points per cloud (pointmlp, pointnet2-*)")
      ->check(dtrain::util::positive());
  app.add_option("--threads", options.threads, "Intra-op threads per process")
      ->check(dtrain::util::positive());
  app.add_option("--bucket-cap-mb", options.bucket_cap_mb)->check(dtrain::util::positive());
  app.add_option("--first-bucket-mb", options.first_bucket_mb)->check(dtrain::util::positive());
  app.add_option("--csv", options.csv, "Append one row per round here (rank 0)");
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return bench(options); });
}
