// predict_pointnet2: classifies point clouds from files a user has (PLY,
// or text x y z [nx ny nz] a line) with a checkpoint of train_pointnet2,
// printing each file's most probable classes:
//
//   predict_pointnet2 --checkpoint out/model.pt chair.ply table.txt
//   chair.ply: chair 0.9312, stool 0.0411, bench 0.0107
//
// The SDK's function does the work (dtrain/models/pointnet2_classifier.h);
// the files are read by dtrain/datasets/point_cloud_file.h.
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dtrain/datasets/point_cloud_file.h"
#include "dtrain/models/pointnet2_classifier.h"
#include "dtrain/train/job.h"
#include "dtrain/train/trainer_options.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/launch_env.h"

namespace {

struct PredictOptions {
  std::string checkpoint;
  std::vector<std::string> clouds;
  int64_t top_k = 5;
  dtrain::train::Device device = dtrain::train::Device::kCpu;
};

void add_flags(CLI::App& app, PredictOptions& options) {
  app.add_option("--checkpoint", options.checkpoint,
                 "A checkpoint written by train_pointnet2 (--checkpoint)")
      ->required();
  app.add_option("clouds", options.clouds,
                 "Point cloud files: PLY (ascii or binary, vertex x y z [nx ny nz]) or text "
                 "(x y z [nx ny nz] a line, separated by spaces or commas)")
      ->required();
  app.add_option("--top-k", options.top_k, "Classes printed for each cloud, most probable first")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--device", options.device, "Where the model runs: cpu or cuda")
      ->transform(CLI::CheckedTransformer(std::map<std::string, dtrain::train::Device>{
          {"cpu", dtrain::train::Device::kCpu}, {"cuda", dtrain::train::Device::kCuda}}))
      ->capture_default_str();
}

// "chair 0.9312, stool 0.0411": the guesses in the order given.
std::string guesses_line(const std::vector<dtrain::models::ClassGuess>& guesses) {
  std::vector<std::string> words;
  for (const auto& guess : guesses) {
    words.push_back(fmt::format("{} {:.4f}", guess.name, guess.probability));
  }
  return fmt::format("{}", fmt::join(words, ", "));
}

int predict(const PredictOptions& options) {
  const c10::Device device =
      dtrain::train::choose_device(dtrain::util::read_launch_env(), options.device);
  auto classifier = dtrain::models::PointNet2Classifier::load(options.checkpoint, device);
  for (const std::string& path : options.clouds) {
    const at::Tensor cloud = dtrain::datasets::read_point_cloud_file(path);
    std::vector<dtrain::models::ClassGuess> guesses;
    try {
      guesses = classifier.classify(cloud, options.top_k);
    } catch (const dtrain::Error& e) {
      throw dtrain::Error(fmt::format("'{}': {}", path, e.what()));
    }
    std::cout << path << ": " << guesses_line(guesses) << "\n" << std::flush;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Classify point cloud files with a PointNet++ checkpoint of train_pointnet2, printing each "
      "file's most probable classes (CPU or GPU)",
      "predict_pointnet2"};
  PredictOptions options;
  add_flags(app, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return predict(options); });
}
