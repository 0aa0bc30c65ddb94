// Run configs (dtrain/train/run_config.h) as a user meets them in
// train_toycnn: the YAML a run writes beside its report replays the run to
// the same report, flags on the command line win over the file's values,
// and a file with a key or a value no flag takes ends in one line naming
// the file and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include "test_support.h"

namespace dtrain_run_config_test {
namespace {

using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;

ProcessResult run_toycnn(std::vector<std::string> args, int processes = 1) {
  args.insert(args.begin(), DTRAIN_TRAIN_TOYCNN_PATH);
  if (processes > 1) {
    args.insert(args.begin(),
                {DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", std::to_string(processes)});
  }
  return run_process(args);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A report's columns measured on the clock or in memory, which no two runs
// share: times, rates, the share of communication hidden, peak memory.
bool measured(const std::string& column) {
  static const std::regex kMeasured("(_s|_ms|_mb|_per_s_min|_per_s_max|_fraction)$");
  return std::regex_search(column, kMeasured);
}

// Every column of two reports but the measured ones, row by row, named by
// the header; returns the columns compared.
std::set<std::string> expect_same_report(const std::string& expected_csv,
                                         const std::string& got_csv) {
  const auto expected = read_csv(expected_csv);
  const auto got = read_csv(got_csv);
  EXPECT_EQ(got.size(), expected.size()) << got_csv << " has another number of rows";
  std::set<std::string> compared;
  if (expected.empty() || got.size() != expected.size() || got[0] != expected[0]) {
    ADD_FAILURE() << "the reports differ in rows or header";
    return compared;
  }
  const auto& header = expected[0];
  for (size_t column = 0; column < header.size(); ++column) {
    if (measured(header[column])) {
      continue;
    }
    compared.insert(header[column]);
    for (size_t row = 1; row < expected.size(); ++row) {
      EXPECT_EQ(got[row].at(column), expected[row].at(column))
          << header[column] << " in row " << row;
    }
  }
  return compared;
}

// The whole output is one line "train_toycnn: error: ..." holding each fragment.
void expect_refused(const ProcessResult& result, const std::vector<std::string>& fragments) {
  for (const std::string& fragment : fragments) {
    dtrain::testing::expect_one_line_error(result, 2, "train_toycnn", fragment);
  }
}

// A two-process run with many flags away from their defaults (an enum, a
// list of weights, a switch, numbers), then the same run again from the
// config it wrote: the same report but for what the clock and memory
// measure, and the same config but for --csv.
TEST(RunConfig, ReplaysATwoProcessRunToTheSameReport) {
  TempDir dir;
  dtrain::testing::write_tiny_cifar10(dir.path(), /*per_file=*/24, /*test=*/20);
  const auto first = run_toycnn({"--dataset",
                                 "cifar10",
                                 "--data-dir",
                                 dir.path().string(),
                                 "--epochs",
                                 "2",
                                 "--batch-size",
                                 "8",
                                 "--lr",
                                 "0.004",
                                 "--lr-scaling",
                                 "none",
                                 "--momentum",
                                 "0.5",
                                 "--seed",
                                 "7",
                                 "--augment",
                                 "--rank-weights",
                                 "3,1",
                                 "--threads",
                                 "1",
                                 "--csv",
                                 dir.file("first.csv")},
                                2);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string config = dir.file("first.config.yaml");
  ASSERT_TRUE(std::filesystem::exists(config)) << "no run config beside the report";
  const std::string written = read_text(config);
  for (const std::string line : {"\nepochs: 2\n", "\nlr-scaling: none\n", "\nmomentum: 0.5\n",
                                 "\nseed: 7\n", "\naugment: true\n", "\nrank-weights: 3,1\n"}) {
    EXPECT_NE(written.find(line), std::string::npos) << line << " missing from\n" << written;
  }
  for (const std::string key : {"rank:", "world-size:", "init-method:", "config:"}) {
    EXPECT_EQ(written.find("\n" + key), std::string::npos) << key << " in\n" << written;
  }

  const auto again = run_toycnn({"--config", config, "--csv", dir.file("again.csv")}, 2);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const auto compared = expect_same_report(dir.file("first.csv"), dir.file("again.csv"));
  for (const std::string column :
       {"epoch", "samples", "train_loss", "test_loss", "test_accuracy"}) {
    EXPECT_EQ(compared.count(column), 1u) << column << " was not compared";
  }
  std::string replayed = read_text(dir.file("again.config.yaml"));
  const auto csv_line = [](const std::string& csv) { return "\ncsv: " + csv + "\n"; };
  const auto at = replayed.find(csv_line(dir.file("again.csv")));
  ASSERT_NE(at, std::string::npos) << replayed;
  replayed.replace(at, csv_line(dir.file("again.csv")).size(), csv_line(dir.file("first.csv")));
  EXPECT_EQ(replayed, written);
}

// A file's values apply where the command line is silent (--train-limit),
// and the command line's win where both give one (--epochs).
TEST(RunConfig, TheCommandLineWinsOverTheFile) {
  TempDir dir;
  dtrain::testing::write_tiny_cifar10(dir.path(), /*per_file=*/20, /*test=*/10);
  const std::string config = dir.file("run.yaml");
  write_text(config, "dataset: cifar10\ndata-dir: " + dir.path().string() +
                         "\nepochs: 3\ntrain-limit: 40\nbatch-size: 8\nthreads: 1\n");
  const auto result = run_toycnn({"--config", config, "--epochs", "1", "--csv", dir.file("r.csv")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(dir.file("r.csv"));
  ASSERT_EQ(rows.size(), 2u) << "--epochs 1 on the command line, 3 in the file";
  EXPECT_EQ(rows[1].at(1), "40") << "the file's --train-limit";
  const std::string written = read_text(dir.file("r.config.yaml"));
  EXPECT_NE(written.find("\nepochs: 1\n"), std::string::npos) << written;
  EXPECT_NE(written.find("\ntrain-limit: 40\n"), std::string::npos) << written;
}

// Without --csv, no run config is written.
TEST(RunConfig, NoReportNoConfig) {
  TempDir dir;
  dtrain::testing::write_tiny_cifar10(dir.path(), /*per_file=*/4, /*test=*/10);
  const auto result = run_toycnn({"--dataset", "cifar10", "--data-dir", dir.path().string(),
                                  "--epochs", "1", "--threads", "1", "--csv", ""});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_NE(entry.path().extension(), ".yaml") << entry.path();
  }
}

TEST(RunConfig, AnUnknownKeyIsRefusedNamingIt) {
  TempDir dir;
  const std::string config = dir.file("run.yaml");
  write_text(config, "epochs: 2\nepoch: 3\n");
  expect_refused(run_toycnn({"--config", config}),
                 {"--config " + config + ": unknown key 'epoch'", "did you mean --epochs?"});
}

// Not in a run config, and refused in one: how a process joins its job.
TEST(RunConfig, AJoiningFlagIsRefusedNamingIt) {
  TempDir dir;
  const std::string config = dir.file("run.yaml");
  write_text(config, "rank: 1\n");
  expect_refused(run_toycnn({"--config", config}),
                 {"--config " + config + ": key 'rank' is not read from a run config"});
}

// A number, a word of an enum and a switch, each given what its flag
// refuses; refused even where the command line gives the flag too.
TEST(RunConfig, AValueOfTheWrongTypeIsRefusedNamingTheKey) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"epochs: two\n", {}},
      {"amp: bf17\n", {}},
      {"augment: maybe\n", {}},
      {"batch-size: [8, 16]\n", {}},
      {"epochs: two\n", {"--epochs", "1"}}};
  for (const auto& [text, more] : cases) {
    SCOPED_TRACE(text);
    const std::string config = dir.file("run.yaml");
    write_text(config, text);
    std::vector<std::string> args{"--config", config};
    args.insert(args.end(), more.begin(), more.end());
    const std::string key = text.substr(0, text.find(':'));
    expect_refused(run_toycnn(args), {"--config " + config + ": key '" + key + "'"});
  }
}

}  // namespace
}  // namespace dtrain_run_config_test
