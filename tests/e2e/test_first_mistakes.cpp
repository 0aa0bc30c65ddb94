// The five commonest first mistakes, as a newcomer makes them with the
// training apps and dtrun: no dataset, a wrong path, a flag that differs
// between processes, an unknown flag and --device cuda without a GPU. Each
// must end in one line that says what to do, never a stack trace, a hang
// or a crash deep in training. And every program's --help fits a screen.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.h"

namespace {

using dtrain::testing::expect_one_line_error;
using dtrain::testing::non_empty_lines;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::small_synthetic_run;
using dtrain::testing::TempDir;

// What a screen holds: --help longer than this scrolls its start away.
constexpr size_t kScreenLines = 45;

const std::vector<std::string>& apps() {
  static const std::vector<std::string> paths{DTRAIN_TRAIN_POINTNET2_PATH,
                                              DTRAIN_TRAIN_PARTSEG_PATH, DTRAIN_TRAIN_TOYCNN_PATH};
  return paths;
}

std::string name_of(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// A dataset that must be given and was not: the line names the flag and
// the variable that give it, and what the directory must hold.
TEST(FirstMistakes, NoDataset) {
  expect_one_line_error(run_process({DTRAIN_TRAIN_POINTNET2_PATH, "--dataset", "modelnet40"}), 1,
                        "train_pointnet2",
                        "--dataset modelnet40 needs --data-dir (or $DTRAIN_MODELNET_DIR)");
  expect_one_line_error(run_process({DTRAIN_TRAIN_TOYCNN_PATH, "--dataset", "cifar10"}), 1,
                        "train_toycnn",
                        "--dataset cifar10 needs --data-dir (or $DTRAIN_CIFAR10_DIR)");
}

// A --data-dir that does not exist: the line names it and what to pass.
TEST(FirstMistakes, WrongPath) {
  expect_one_line_error(run_process({DTRAIN_TRAIN_POINTNET2_PATH, "--dataset", "modelnet40",
                                     "--data-dir", "/no/such/dir"}),
                        1, "train_pointnet2",
                        "'/no/such/dir' does not exist (pass the unpacked "
                        "modelnet40_ply_hdf5_2048 directory");
  expect_one_line_error(run_process({DTRAIN_TRAIN_PARTSEG_PATH, "--dataset", "shapenet-part",
                                     "--data-dir", "/no/such/dir"}),
                        1, "train_partseg",
                        "'/no/such/dir' does not exist (pass the unpacked "
                        "shapenet_part_seg_hdf5_data directory");
  expect_one_line_error(
      run_process({DTRAIN_TRAIN_TOYCNN_PATH, "--dataset", "cifar10", "--data-dir", "/no/such/dir"}),
      1, "train_toycnn", "'/no/such/dir' does not exist (pass the directory holding");
}

// A misspelt flag: the line names it and the flag it was probably meant
// to be, for the apps and for dtrun.
TEST(FirstMistakes, UnknownFlag) {
  for (const std::string& app : apps()) {
    SCOPED_TRACE(app);
    expect_one_line_error(run_process({app, "--epoch", "3"}), 2, name_of(app),
                          "unexpected argument(s): --epoch 3; did you mean --epochs?; see " +
                              name_of(app) + " --help");
  }
  expect_one_line_error(run_process({DTRAIN_DTRUN_PATH, "--nproc-per-nodes", "2", "./train"}), 2,
                        "dtrun",
                        "unknown flag '--nproc-per-nodes'; did you mean --nproc-per-node?; see "
                        "dtrun --help");
}

// --device cuda where no GPU is visible (hidden here on any machine): the
// line says what is missing and how to train anyway.
TEST(FirstMistakes, CudaWithoutAGpu) {
  for (const std::string& app : apps()) {
    SCOPED_TRACE(app);
    const auto result =
        run_process({"/usr/bin/env", "CUDA_VISIBLE_DEVICES=", app, "--device", "cuda"});
    expect_one_line_error(result, 1, name_of(app),
                          "no CUDA device is visible (none installed, CUDA_VISIBLE_DEVICES hides "
                          "them, or LibTorch was built without CUDA); train with --device cpu");
  }
}

// Two processes of one job whose commands differ, as two nodes' can: under
// dtrun, each runs the app through a shell that adds --epochs 2 on rank 0
// and --epochs 3 on rank 1. Both stop as the job starts, naming the flag
// and each rank's value, rather than training on until one waits for the
// other in a collective. --threads, which may differ, is not named.
TEST(FirstMistakes, AFlagThatDiffersBetweenProcesses) {
  TempDir dir;
  std::vector<std::string> args{DTRAIN_DTRUN_PATH,
                                "--standalone",
                                "--nproc-per-node",
                                "2",
                                "/bin/sh",
                                "-c",
                                R"(exec "$@" --epochs $((RANK + 2)) --threads $((RANK + 1)))",
                                "sh",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  const auto run = small_synthetic_run(dir.file("shapes"), dir.file("report.csv"));
  args.insert(args.end(), run.begin(), run.end());
  const auto result = run_process(args);
  EXPECT_NE(result.exit_code, 0) << result.output;
  // Each rank's own line, named by its rank.
  const std::string said =
      "): error: the processes of this job were started with different settings: "
      "--epochs: \"2\" on rank 0, \"3\" on rank 1. Start every process with the same flags";
  for (const std::string rank : {"0", "1"}) {
    EXPECT_NE(result.output.find("train_pointnet2 (rank " + rank + said), std::string::npos)
        << result.output;
  }
  EXPECT_EQ(result.output.find("--threads:"), std::string::npos) << result.output;
  EXPECT_LE(read_csv(dir.file("report.csv")).size(), 1u) << "the job trained an epoch";
}

// The topics a plain --help names ("More flags by topic: data, model.").
std::vector<std::string> topics_of(const std::string& help) {
  const std::string intro = "More flags by topic: ";
  const size_t begin = help.find(intro);
  if (begin == std::string::npos) {
    return {};
  }
  std::vector<std::string> topics;
  std::string topic;
  for (size_t i = begin + intro.size(); i < help.size() && help[i] != '.'; ++i) {
    if (help[i] == ',') {
      topics.push_back(topic);
      topic.clear();
    } else if (help[i] != ' ') {
      topic += help[i];
    }
  }
  topics.push_back(topic);
  return topics;
}

// --help shows the common flags and the topics on one screen, and so does
// --help TOPIC for each topic; --help-all shows everything; an unknown
// topic names the topics.
TEST(FirstMistakes, HelpFitsOneScreen) {
  std::vector<std::string> programs = apps();
  programs.push_back(DTRAIN_DTRUN_PATH);
  for (const std::string& program : programs) {
    SCOPED_TRACE(program);
    const auto help = run_process({program, "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    EXPECT_LE(non_empty_lines(help.output).size(), kScreenLines) << help.output;
    EXPECT_NE(help.output.find("--help TOPIC"), std::string::npos) << help.output;
    const std::vector<std::string> topics = topics_of(help.output);
    EXPECT_GE(topics.size(), 2u) << help.output;
    for (const std::string& topic : topics) {
      const auto one = run_process({program, "--help", topic});
      EXPECT_EQ(one.exit_code, 0) << one.output;
      EXPECT_LE(non_empty_lines(one.output).size(), kScreenLines) << topic << ":\n" << one.output;
    }
    const auto all = run_process({program, "--help-all"});
    EXPECT_EQ(all.exit_code, 0) << all.output;
    EXPECT_GT(non_empty_lines(all.output).size(), non_empty_lines(help.output).size());
    expect_one_line_error(run_process({program, "--help", "nonsense"}), 2, name_of(program),
                          "no such topic; the topics are ");
  }
  const auto distributed = run_process({DTRAIN_TRAIN_POINTNET2_PATH, "--help", "distributed"});
  EXPECT_EQ(distributed.exit_code, 0) << distributed.output;
  EXPECT_NE(distributed.output.find("--rank-weights"), std::string::npos) << distributed.output;
  EXPECT_EQ(distributed.output.find("--epochs"), std::string::npos) << distributed.output;
  EXPECT_LE(non_empty_lines(distributed.output).size(), kScreenLines) << distributed.output;
}

}  // namespace
