// How long a training step waits for a checkpoint: dtrain's
// train::save_checkpoint (serialize, write, flush to disk, rename: the step
// waits for all of it) against train::CheckpointWriter (the step waits only
// for the serialization; the write, flush and rename run in the
// background), for PointNet++ classifiers with Adam's state.
// benchmarks/peers/checkpoint_torch.py is the PyTorch counterpart (torch.save
// of the same model's state_dict and Adam's, with and without the flush and
// rename that make it atomic); benchmarks/run_checkpoint.sh runs both.
//
//   bench_checkpoint --preset ssg --repeats 7 --dir /tmp/ckpt --csv out.csv
//
// Rows (appended): impl, preset, parameters, file_mb, mode, repeats,
// median_ms, where mode is
//   blocking    save_checkpoint: the whole write in the step;
//   background  CheckpointWriter::save: what the step waits for;
//   on_disk     CheckpointWriter::save then wait(): until the file is whole.
#include <ATen/ATen.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/process_setup.h"
#include "median_step.h"

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string preset = "ssg";
  int64_t classes = 40;
  int repeats = 7;
  std::string dir = "out/bench_checkpoint";
  std::string csv = "out/bench_checkpoint.csv";
};

int run(const Options& o) {
  at::manual_seed(0);
  dtrain::models::PointNet2Cls model(dtrain::models::pointnet2_cls_preset(o.preset, o.classes));
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  // Adam's moments exist after a step: one on made-up gradients (no forward).
  int64_t parameters = 0;
  for (auto& parameter : model->parameters()) {
    parameter.mutable_grad() = at::randn_like(parameter);
    parameters += parameter.numel();
  }
  optimizer.step();
  fs::create_directories(o.dir);
  const std::string path = (fs::path(o.dir) / ("dtrain_" + o.preset + ".pt")).string();
  const dtrain::train::TrainingProgress progress{.epochs_done = 1};

  dtrain::train::CsvWriter csv(
      o.csv, {"impl", "preset", "parameters", "file_mb", "mode", "repeats", "median_ms"},
      dtrain::train::CsvWriter::Mode::kAppend);
  const double blocking = dtrain::bench::median_step_ms(1, o.repeats, [&](int) {
    dtrain::train::save_checkpoint(path, *model, optimizer, progress);
  });
  const double file_mb = static_cast<double>(fs::file_size(path)) / (1 << 20);
  dtrain::train::CheckpointWriter writer;
  const double on_disk = dtrain::bench::median_step_ms(1, o.repeats, [&](int) {
    writer.save(path, *model, optimizer, progress);
    writer.wait();
  });
  // What a step waits for: the save() alone, each after the previous write
  // finished (as when steps between checkpoints outlast a write).
  std::vector<double> returns;
  for (int i = 0; i < o.repeats + 1; ++i) {
    writer.wait();
    const auto start = std::chrono::steady_clock::now();
    writer.save(path, *model, optimizer, progress);
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) {
      returns.push_back(ms);
    }
  }
  writer.wait();
  std::nth_element(returns.begin(), returns.begin() + static_cast<long>(returns.size() / 2),
                   returns.end());
  const double background = returns[returns.size() / 2];
  for (const auto& [mode, ms] :
       {std::pair{"blocking", blocking}, std::pair{"background", background},
        std::pair{"on_disk", on_disk}}) {
    csv.write_row({std::string("dtrain"), o.preset, parameters, fmt::format("{:.2f}", file_mb),
                   std::string(mode), static_cast<int64_t>(o.repeats), fmt::format("{:.3f}", ms)});
    spdlog::info("dtrain {} {}: {:.3f} ms ({:.2f} MB)", o.preset, mode, ms, file_mb);
  }
  fs::remove(path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // dtrain's logging and crash traces; malloc keeps glibc's settings.
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  CLI::App app{"Time a checkpoint save of a PointNet++ classifier with Adam's state",
               "bench_checkpoint"};
  Options o;
  app.add_option("--preset", o.preset, "Model preset")
      ->check(CLI::IsMember({"ssg-lite", "ssg", "msg"}))
      ->capture_default_str();
  app.add_option("--classes", o.classes, "Classes of the head")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--repeats", o.repeats, "Timed saves per mode (the row is their median)")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--dir", o.dir, "Where the checkpoints are written")->capture_default_str();
  app.add_option("--csv", o.csv, "CSV to append the rows to")->capture_default_str();
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return run(o); });
}
