// train_toycnn as a user runs it: bad input ends with one clear line, and a
// real run writes its CSV report and reaches the accuracy bar, on
// Fashion-MNIST and on a tiny CIFAR-10 written here.
#include <gtest/gtest.h>

#include <filesystem>

#include "dtrain/datasets/fashion_mnist.h"
#include "test_support.h"

namespace {

using dtrain::testing::expect_curves_beside;
using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;
using dtrain::testing::write_tiny_cifar10;

ProcessResult run_app(std::vector<std::string> args) {
  args.insert(args.begin(), DTRAIN_TRAIN_TOYCNN_PATH);
  return run_process(args);
}

// The whole output is one line starting "train_toycnn: error:" and containing `fragment`.
void expect_one_line_error(const ProcessResult& result, int exit_code,
                           const std::string& fragment) {
  dtrain::testing::expect_one_line_error(result, exit_code, "train_toycnn", fragment);
}

// 100 training and 30 test images of noise, labels 0..9 in turn from
// `first_label`, in IDX files.
void write_tiny_dataset(const std::filesystem::path& dir, std::uint32_t first_label = 0) {
  auto write = [&](const std::string& prefix, std::uint32_t count) {
    std::vector<unsigned char> pixels(count * 784);
    std::vector<unsigned char> labels(count);
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      pixels[i] = static_cast<unsigned char>((i * 37) % 251);
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      labels[i] = static_cast<unsigned char>((first_label + i) % 10);
    }
    dtrain::testing::write_file((dir / (prefix + "-images-idx3-ubyte")).string(),
                                dtrain::testing::idx_bytes_u8({count, 28, 28}, pixels));
    dtrain::testing::write_file((dir / (prefix + "-labels-idx1-ubyte")).string(),
                                dtrain::testing::idx_bytes_u8({count}, labels));
  };
  write("train", 100);
  write("t10k", 30);
}

// The flags of a short CIFAR-10 run on `dir`, reporting to `csv`. A lower
// rate than the default: at 0.01 (with momentum 0.9) the accuracy on these
// few images swings between epochs. At 0.003, over --seed 0-9, the eighth
// epoch reached 100% alone every time, and 90-100% as two processes with
// --augment (0.006 with the linear scaling), 100% for seed 0.
std::vector<std::string> cifar10_args(const TempDir& dir, const std::string& csv, int epochs) {
  return {"--dataset",    "cifar10",
          "--data-dir",   dir.path().string(),
          "--epochs",     std::to_string(epochs),
          "--batch-size", "16",
          "--lr",         "0.003",
          "--threads",    "1",
          "--csv",        csv};
}

TEST(TrainToyCnnErrors, UnknownFlag) {
  expect_one_line_error(run_app({"--bogus"}), 2, "--bogus");
}

TEST(TrainToyCnnErrors, OutOfRangeValue) {
  expect_one_line_error(run_app({"--epochs", "0"}), 2, "--epochs");
}

TEST(TrainToyCnnErrors, MissingDataDirectory) {
  expect_one_line_error(run_app({"--data-dir", "/no/such/dir"}), 1,
                        "Fashion-MNIST directory '/no/such/dir' does not exist");
}

TEST(TrainToyCnnErrors, TruncatedIdxFile) {
  TempDir dir;
  // Header promises 50 images of 28x28; the file holds 10.
  dtrain::testing::write_file(
      dir.file("train-images-idx3-ubyte"),
      dtrain::testing::idx_bytes_u8({50, 28, 28}, std::vector<unsigned char>(10 * 784)));
  dtrain::testing::write_file(dir.file("train-labels-idx1-ubyte"),
                              dtrain::testing::idx_bytes_u8({50}, std::vector<unsigned char>(50)));
  expect_one_line_error(run_app({"--data-dir", dir.path().string()}), 1,
                        "train-images-idx3-ubyte' is truncated: the data needs 39200 bytes but "
                        "only 7840 remain");
}

TEST(TrainToyCnnErrors, UnknownDataset) {
  expect_one_line_error(run_app({"--dataset", "mnist"}), 2, "--dataset");
}

TEST(TrainToyCnnErrors, Cifar10MissingTestBatch) {
  TempDir dir;
  write_tiny_cifar10(dir.path(), /*per_file=*/2, /*test=*/0);
  expect_one_line_error(
      run_app({"--dataset", "cifar10", "--data-dir", dir.path().string()}), 1,
      "CIFAR-10 file 'test_batch.bin' not found in '" + dir.path().string() + "'");
}

TEST(TrainToyCnnErrors, Cifar10NeedsADirectory) {
  // The variable would otherwise give the directory.
  const dtrain::testing::ScopedEnv no_default("DTRAIN_CIFAR10_DIR", nullptr);
  expect_one_line_error(run_app({"--dataset", "cifar10"}), 1,
                        "--dataset cifar10 needs --data-dir (or $DTRAIN_CIFAR10_DIR)");
}

// --data-dir may name another copy of the dataset on each node, but not
// another dataset: two copies of the same size whose labels differ stop
// both processes as the job starts, naming the labels and not a flag.
TEST(TrainToyCnnErrors, ProcessesGivenDifferentDatasetsNameTheirLabels) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "data0");
  std::filesystem::create_directories(dir.path() / "data1");
  write_tiny_dataset(dir.path() / "data0");
  write_tiny_dataset(dir.path() / "data1", /*first_label=*/1);
  const std::string csv = dir.file("report.csv");
  const auto result =
      run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2", "/bin/sh", "-c",
                   "exec \"$@\" --data-dir \"" + (dir.path() / "data").string() + "$RANK\"", "sh",
                   DTRAIN_TRAIN_TOYCNN_PATH, "--epochs", "1", "--threads", "1", "--csv", csv});
  EXPECT_NE(result.exit_code, 0) << result.output;
  for (const std::string rank : {"0", "1"}) {
    const std::string line = "train_toycnn (rank " + rank +
                             "): error: the processes of this job were started with different "
                             "settings: training images' labels: \"fingerprint ";
    EXPECT_NE(result.output.find(line), std::string::npos) << result.output;
  }
  EXPECT_NE(result.output.find("give each a --data-dir holding the same dataset"),
            std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("--data-dir: "), std::string::npos) << result.output;
  EXPECT_LE(read_csv(csv).size(), 1u) << "the job trained an epoch";
}

// The same copies with the same labels train together.
TEST(TrainToyCnn, TwoCopiesOfOneDatasetTrainTogether) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "data0");
  std::filesystem::create_directories(dir.path() / "data1");
  write_tiny_dataset(dir.path() / "data0");
  write_tiny_dataset(dir.path() / "data1");
  const auto result =
      run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2", "/bin/sh", "-c",
                   "exec \"$@\" --data-dir \"" + (dir.path() / "data").string() + "$RANK\"", "sh",
                   DTRAIN_TRAIN_TOYCNN_PATH, "--epochs", "1", "--threads", "1", "--csv",
                   dir.file("report.csv")});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_csv(dir.file("report.csv")).size(), 2u) << result.output;
}

TEST(TrainToyCnnErrors, UnwritableReport) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  TempDir dir;
  dtrain::testing::write_file(dir.file("blocker"), {'x'});
  expect_one_line_error(run_app({"--train-limit", "64", "--test-limit", "64", "--csv",
                                 dir.file("blocker/report.csv")}),
                        1, "for CSV report");
}

TEST(TrainToyCnn, ShortRunWritesReport) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const auto result = run_app({"--epochs", "2", "--train-limit", "6000", "--test-limit", "1000",
                               "--threads", "1", "--csv", csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("[rank -/local -] [info] epoch 2/2: train loss"), std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"epoch", "samples", "epoch_time_s", "samples_per_s",
                                      "peak_rss_mb", "train_loss", "test_loss", "test_accuracy",
                                      "rank_samples_per_s_min", "rank_samples_per_s_max", "step_ms",
                                      "comm_s", "comm_hidden_fraction", "peak_device_mb"}));
  // One process: its own rate is the job's, and nothing was communicated.
  EXPECT_EQ(rows[2][8], rows[2][9]);
  EXPECT_GT(std::stod(rows[2][10]), 0.0);
  EXPECT_EQ(rows[2][11], "0");
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[2][1], "6000");
  EXPECT_GT(std::stod(rows[2][3]), 0.0);
  EXPECT_GT(std::stod(rows[2][4]), 10.0);  // peak RSS in MiB: LibTorch alone is far above this
  // Learning happened: the second epoch is better than the first, and far above chance (10%).
  EXPECT_LT(std::stod(rows[2][6]), std::stod(rows[1][6]));
  EXPECT_GT(std::stod(rows[2][7]), 0.5);
}

// --checkpoint and --resume: a run that stops after epoch 1 and is resumed
// for epoch 2 (SGD's momentum buffers restored with the weights) ends
// exactly as an unbroken two-epoch run; a checkpoint of another model is
// refused, naming the file.
TEST(TrainToyCnn, ResumeContinuesAsAnUnbrokenRun) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  TempDir dir;
  auto run = [&](const std::string& name, const std::string& epochs,
                 std::vector<std::string> more) {
    std::vector<std::string> args{
        "--epochs", epochs,  "--train-limit",        "2000", "--test-limit", "500", "--threads",
        "1",        "--csv", dir.file(name + ".csv")};
    args.insert(args.end(), more.begin(), more.end());
    return run_app(args);
  };
  const auto unbroken = run("unbroken", "2", {});
  ASSERT_EQ(unbroken.exit_code, 0) << unbroken.output;
  const std::string checkpoint = dir.file("toycnn.pt");
  const auto first = run("split", "1", {"--checkpoint", checkpoint});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = run("split", "2", {"--checkpoint", checkpoint, "--resume"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from " + checkpoint + " after epoch 1"), std::string::npos)
      << second.output;
  const auto expected = read_csv(dir.file("unbroken.csv"));
  const auto got = read_csv(dir.file("split.csv"));
  ASSERT_EQ(got.size(), 3u) << "the resumed run adds its epoch to the report";
  for (size_t column : {5u, 6u, 7u}) {  // train_loss, test_loss, test_accuracy
    EXPECT_EQ(got[2].at(column), expected[2].at(column)) << "column " << column;
  }
  // The CIFAR-10 model has three input channels: this checkpoint is not its.
  const std::string cifar = dir.file("cifar10");
  std::filesystem::create_directories(cifar);
  write_tiny_cifar10(cifar, 20, 10);
  const auto other = run_app({"--dataset", "cifar10", "--data-dir", cifar, "--epochs", "1", "--csv",
                              dir.file("other.csv"), "--checkpoint", checkpoint, "--resume"});
  EXPECT_EQ(other.exit_code, 1) << other.output;
  EXPECT_NE(other.output.find("checkpoint '" + checkpoint + "' does not fit the model"),
            std::string::npos)
      << other.output;
}

// Two epochs over all 60,000 training images, as the seed tutorial's toy
// CNN trains: a third adds time, not accuracy.
TEST(TrainToyCnn, FullRunReaches85Percent) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const auto result = run_app({"--epochs", "2", "--csv", csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][1], "60000");
  EXPECT_GE(std::stod(rows[2][7]), 0.85) << "final test accuracy";
}

// The README's run command: two processes under dtrun, DDP and
// DistributedSampler, to the same accuracy bar as one process.
TEST(TrainToyCnn, TwoProcessesUnderDtrunReach85Percent) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const auto result = run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                   DTRAIN_TRAIN_TOYCNN_PATH, "--epochs", "3", "--csv", csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("process group ready: rank 1 of 2"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("on 2 process(es)"), std::string::npos) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 4u) << "only rank 0 writes the report, once per epoch";
  EXPECT_EQ(rows[3][1], "60000") << "every rank's samples counted once";
  EXPECT_GE(std::stod(rows[3][7]), 0.85) << "final test accuracy";
}

// The seed's own data, in miniature: 1,000 training images of 10 colours in
// five batch files, 100 test images. The classes are easy, so the bar is
// high; chance is 10%.
TEST(TrainToyCnnCifar10, OneProcessLearnsTinyCifar10) {
  TempDir dir;
  write_tiny_cifar10(dir.path());
  const std::string csv = dir.file("report.csv");
  const auto result = run_app(cifar10_args(dir, csv, 8));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("CIFAR-10 from " + dir.path().string() +
                               ": 1000 training, 100 test images; 1 process(es)"),
            std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[8][1], "1000");
  EXPECT_GE(std::stod(rows[8][7]), 0.9) << "final test accuracy";
  expect_curves_beside(csv, result.output);
}

// Two processes under dtrun with augmentation: DDP and DistributedSampler
// over the CIFAR-10 files, each rank cropping and flipping its own batches.
// The bar is lower than alone: one seed in ten stayed at 90% (see
// cifar10_args).
TEST(TrainToyCnnCifar10, TwoProcessesUnderDtrunWithAugmentation) {
  TempDir dir;
  write_tiny_cifar10(dir.path());
  const std::string csv = dir.file("report.csv");
  std::vector<std::string> args = {DTRAIN_DTRUN_PATH,        "--standalone",
                                   "--nproc-per-node",       "2",
                                   DTRAIN_TRAIN_TOYCNN_PATH, "--augment"};
  for (const std::string& arg : cifar10_args(dir, csv, 8)) {
    args.push_back(arg);
  }
  const auto result = run_process(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("process group ready: rank 1 of 2"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("(training images randomly cropped and flipped); 2 process(es)"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("500 images per process per epoch"), std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 9u) << "only rank 0 writes the report, once per epoch";
  EXPECT_EQ(rows[8][1], "1000") << "every rank's samples counted once";
  EXPECT_GE(std::stod(rows[8][7]), 0.8) << "final test accuracy";
}

// --augment changes what the model sees, and the same seed draws the same
// crops and flips again: the training losses repeat to the last digit,
// whether batches are made in the step or ahead by one or three loader
// threads (each batch draws from its own generator).
TEST(TrainToyCnnCifar10, AugmentationIsReproducible) {
  TempDir dir;
  write_tiny_cifar10(dir.path(), /*per_file=*/20, /*test=*/20);
  auto train_losses = [&](const std::string& name, bool augment,
                          const std::string& loader_workers = "1") {
    std::vector<std::string> args = cifar10_args(dir, dir.file(name), 2);
    if (augment) {
      args.push_back("--augment");
    }
    args.insert(args.end(), {"--loader-workers", loader_workers});
    const auto result = run_app(args);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::vector<std::string> losses;
    for (const auto& row : read_csv(dir.file(name))) {
      losses.push_back(row.at(5));
    }
    return losses;
  };
  const auto first = train_losses("first.csv", true);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(train_losses("again.csv", true), first);
  EXPECT_EQ(train_losses("in_step.csv", true, "0"), first);
  EXPECT_EQ(train_losses("three_loaders.csv", true, "3"), first);
  const auto plain = train_losses("plain.csv", false);
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_NE(plain[1], first[1]) << "--augment left the first epoch's batches as they were";
}

// Sharding: a world of 3 splits 100 training images into 34 per rank
// (padded to 102, as DistributedSampler does) and evaluates every test image once.
TEST(TrainToyCnn, ThreeProcessesShardTheData) {
  TempDir dir;
  write_tiny_dataset(dir.path());
  const std::string csv = dir.file("report.csv");
  const auto result = run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "3",
                                   DTRAIN_TRAIN_TOYCNN_PATH, "--data-dir", dir.path().string(),
                                   "--epochs", "1", "--batch-size", "8", "--csv", csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("34 images per process per epoch"), std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][1], "102");
}

// --rank-weights 3,1 splits the same 100 images 75 and 25, without
// padding, and the global batch of 16 into 12 and 4: process 0 takes 7
// steps and process 1 six (its last single image joins the batch before
// it), waiting in DDP's join for the seventh.
TEST(TrainToyCnn, RankWeightsSplitTheDataWithoutPadding) {
  TempDir dir;
  write_tiny_dataset(dir.path());
  const std::string csv = dir.file("report.csv");
  const auto result =
      run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                   DTRAIN_TRAIN_TOYCNN_PATH, "--data-dir", dir.path().string(), "--epochs", "1",
                   "--batch-size", "8", "--rank-weights", "3,1", "--csv", csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("epoch 1/1: images per process this epoch: 75, 25; batches 12, 4; "
                               "steps 7, 6"),
            std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][1], "100") << "every image once, none padded or dropped";
}

}  // namespace
