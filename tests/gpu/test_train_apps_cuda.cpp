// The training apps with --device cuda, as a user runs them: the
// classifier in each precision (fp32, bf16 autocast, fp16 autocast with
// loss scaling), part segmentation, the toy CNN on CIFAR-10, a CPU
// checkpoint resumed on the GPU, two processes on two GPUs over NCCL, and
// two sharing one GPU over NCCL (dtrun --share-gpu) and over Gloo. Each test skips, saying
// why, when the app finds no CUDA device (or too few).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;
using dtrain::testing::write_tiny_cifar10;

constexpr std::size_t kPeakDeviceMb = 13;  // the report's column

// A small synthetic run on the GPU (small_synthetic_run), 2 epochs.
std::vector<std::string> small_run(const char* app, const TempDir& dir, const std::string& csv) {
  std::vector<std::string> args{app, "--device", "cuda", "--epochs", "2"};
  for (auto& arg : dtrain::testing::small_synthetic_run(dir.file("shapes"), csv)) {
    args.push_back(std::move(arg));
  }
  return args;
}

// True (and the test should skip) when the app said it found no GPU to use.
bool no_gpu(const ProcessResult& result) {
  return result.output.find("no CUDA device is visible") != std::string::npos ||
         result.output.find("CUDA device(s) are visible") != std::string::npos;
}

// A finished run's report: two epochs on the GPU, its memory counted, and
// training that went somewhere (a finite loss that fell; an fp16 run whose
// every step overflowed and was skipped would not).
void expect_gpu_report(const ProcessResult& result, const std::string& csv) {
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("process(es) on cuda:0"), std::string::npos) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << result.output;
  EXPECT_EQ(rows[0][kPeakDeviceMb], "peak_device_mb");
  EXPECT_GT(std::stod(rows[2][kPeakDeviceMb]), 0.0) << "no GPU memory was allocated";
  const double first_loss = std::stod(rows[1][5]);
  const double second_loss = std::stod(rows[2][5]);
  EXPECT_TRUE(std::isfinite(second_loss)) << result.output;
  EXPECT_LT(second_loss, first_loss) << "training loss did not fall";
  const double accuracy = std::stod(rows[2][7]);
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
}

TEST(TrainAppsCuda, ClassifierTrainsInEachPrecision) {
  for (const std::string amp : {"off", "bf16", "fp16"}) {
    SCOPED_TRACE("--amp " + amp);
    TempDir dir;
    const std::string csv = dir.file("report.csv");
    auto args = small_run(DTRAIN_TRAIN_POINTNET2_PATH, dir, csv);
    args.insert(args.end(), {"--amp", amp});
    const ProcessResult result = run_process(args);
    if (no_gpu(result)) {
      GTEST_SKIP() << "no CUDA device visible";
    }
    expect_gpu_report(result, csv);
    if (amp == "fp16") {
      EXPECT_NE(result.output.find("fp16 autocast with loss scaling"), std::string::npos)
          << result.output;
    }
  }
}

TEST(TrainAppsCuda, PartSegmentationTrains) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  auto args = small_run(DTRAIN_TRAIN_PARTSEG_PATH, dir, csv);
  args.insert(args.end(), {"--amp", "fp16"});
  const ProcessResult result = run_process(args);
  if (no_gpu(result)) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  expect_gpu_report(result, csv);
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows[0].size(), 16u);
  // Two epochs of 48 clouds leave batch norm's statistics unsettled (on the
  // CPU the test mIoU is 0.24-0.37), so only the range is checked here;
  // test_train_partseg.cpp holds a longer run to a bar.
  const double miou = std::stod(rows[2][14]);
  EXPECT_GT(miou, 0.0) << "instance mIoU";
  EXPECT_LE(miou, 1.0) << "instance mIoU";
}

// The seed tutorial's program on its own data (a tiny CIFAR-10 written
// here), with augmentation, in fp16 with loss scaling.
TEST(TrainAppsCuda, ToyCnnTrainsOnCifar10) {
  TempDir dir;
  write_tiny_cifar10(dir.path());
  const std::string csv = dir.file("report.csv");
  // clang-format off
  const ProcessResult result = run_process({
      DTRAIN_TRAIN_TOYCNN_PATH, "--device", "cuda", "--amp", "fp16", "--augment",
      "--dataset", "cifar10", "--data-dir", dir.path().string(), "--epochs", "2",
      "--batch-size", "16", "--lr", "0.003", "--threads", "1", "--csv", csv});
  // clang-format on
  if (no_gpu(result)) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  expect_gpu_report(result, csv);
  EXPECT_EQ(read_csv(csv)[2][1], "1000") << "every training image counted once";
}

// A checkpoint written by a CPU run continues on the GPU: its tensors, the
// optimizer's state included, land on the model's device.
TEST(TrainAppsCuda, CpuCheckpointResumesOnTheGpu) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const std::string checkpoint = dir.file("model.pt");
  auto on_cpu = small_run(DTRAIN_TRAIN_POINTNET2_PATH, dir, csv);
  on_cpu[2] = "cpu";
  on_cpu.insert(on_cpu.end(), {"--epochs", "1", "--checkpoint", checkpoint});
  const ProcessResult first = run_process(on_cpu);
  ASSERT_EQ(first.exit_code, 0) << first.output;

  auto on_gpu = small_run(DTRAIN_TRAIN_POINTNET2_PATH, dir, csv);
  // Mid-epoch checkpoints of a CUDA model too.
  on_gpu.insert(on_gpu.end(), {"--checkpoint", checkpoint, "--resume", "--checkpoint-steps", "2"});
  const ProcessResult second = run_process(on_gpu);
  if (no_gpu(second)) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from " + checkpoint + " after epoch 1"), std::string::npos)
      << second.output;
  EXPECT_EQ(read_csv(csv).size(), 3u) << "one row from each run";
}

// small_run of train_pointnet2 as two processes under dtrun.
std::vector<std::string> two_processes_under_dtrun(const TempDir& dir, const std::string& csv) {
  std::vector<std::string> args{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2"};
  for (auto& arg : small_run(DTRAIN_TRAIN_POINTNET2_PATH, dir, csv)) {
    args.push_back(std::move(arg));
  }
  return args;
}

// The README's job on GPUs: two processes under dtrun, one GPU each, DDP
// over NCCL (the default backend for --device cuda), checkpointing.
TEST(TrainAppsCuda, TwoProcessesOnTwoGpus) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  std::vector<std::string> args = two_processes_under_dtrun(dir, csv);
  // With a checkpoint the ranks agree after every step whether to stop (a
  // CPU value staged through the GPU on NCCL) and sum positions every 2.
  args.insert(args.end(), {"--checkpoint", dir.file("model.pt"), "--checkpoint-steps", "2"});
  const ProcessResult result = run_process(args);
  if (no_gpu(result)) {
    GTEST_SKIP() << "needs two CUDA devices";
  }
  // One visible GPU: each process takes it (as under Slurm's one GPU per
  // task), and NCCL refuses two ranks on one device, which the error names.
  if (result.output.find("Duplicate GPU detected") != std::string::npos) {
    EXPECT_NE(result.exit_code, 0);
    GTEST_SKIP() << "needs two CUDA devices (both ranks took the one GPU, which NCCL refuses)";
  }
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("backend nccl"), std::string::npos) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << result.output;
  EXPECT_EQ(rows[2][1], "48") << "every rank's clouds counted once";
  EXPECT_GT(std::stod(rows[2][11]), 0.0) << "no gradient communication recorded";
}

// Two processes on one GPU over NCCL, each its own NCCL host (dtrun
// --share-gpu): DDP's buckets and the stop agreement go through NCCL over
// loopback, and every rank's clouds are counted once.
TEST(TrainAppsCuda, TwoProcessesShareOneGpuOverNccl) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  std::vector<std::string> args = two_processes_under_dtrun(dir, csv);
  args.insert(args.begin() + 1, "--share-gpu");  // a flag of dtrun's, before the program
  args.insert(args.end(), {"--backend", "nccl", "--checkpoint", dir.file("model.pt"),
                           "--checkpoint-steps", "2"});
  const ProcessResult result = run_process(args);
  if (no_gpu(result)) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  EXPECT_NE(result.output.find("backend nccl"), std::string::npos) << result.output;
  expect_gpu_report(result, csv);
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << result.output;
  EXPECT_EQ(rows[2][1], "48") << "every rank's clouds counted once";
  EXPECT_GT(std::stod(rows[2][11]), 0.0) << "no gradient communication recorded";
}

// Two processes on one GPU, which NCCL refuses: over Gloo, DDP's buckets
// of CUDA gradients are copied through the host and every rank's clouds
// are still counted once.
TEST(TrainAppsCuda, TwoProcessesShareOneGpuOverGloo) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  std::vector<std::string> args = two_processes_under_dtrun(dir, csv);
  args.insert(args.end(), {"--backend", "gloo", "--amp", "bf16"});
  const ProcessResult result = run_process(args);
  if (no_gpu(result)) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  EXPECT_NE(result.output.find("backend gloo"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("gloo copies each bucket of gradients from cuda:"),
            std::string::npos)
      << result.output;
  expect_gpu_report(result, csv);
  EXPECT_EQ(read_csv(csv)[2][1], "48") << "every rank's clouds counted once";
}

}  // namespace
