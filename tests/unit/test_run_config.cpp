// Run configs (dtrain/train/run_config.h) on a small table of every kind of
// flag: the YAML written, read back into a fresh program to the same
// values, the command line winning, and what is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dtrain/train/flag_table.h"
#include "dtrain/train/run_config.h"
#include "test_support.h"

namespace {

using dtrain::train::Agreement;
using dtrain::train::FlagTable;

enum class Mode { kOff, kOn, kAuto };

struct Values {
  int count = 3;
  double rate = 0.01;
  Mode mode = Mode::kOff;
  std::string path;
  bool fast = false;
  int rank = 0;
};

// One program: a number, a fraction, an enum, a path, a switch, and a
// flag left out of run configs.
struct Program {
  CLI::App app{"probe", "probe"};
  Values values;
  FlagTable flags{app};

  Program() {
    static const dtrain::util::EnumWords<Mode> modes{
        {"off", Mode::kOff}, {"on", Mode::kOn}, {"auto", Mode::kAuto}};
    flags.add("--count", values.count, "", Agreement::same());
    flags.add("--rate", values.rate, "", Agreement::same());
    flags.add_choice("--mode", values.mode, modes, "", Agreement::same());
    flags.add("--path", values.path, "", Agreement::may_differ());
    flags.add_switch("--fast,!--slow", values.fast, "", Agreement::same());
    flags.add("--rank", values.rank, "", Agreement::not_compared());
    dtrain::train::add_config_flag(flags, {"--rank"});
  }

  void parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(RunConfigYaml, PathBesideTheReport) {
  EXPECT_EQ(dtrain::train::run_config_path("out/report.csv"), "out/report.config.yaml");
  EXPECT_EQ(dtrain::train::run_config_path("report"), "report.config.yaml");
}

// Keys in the table's order without their dashes; "off" quoted, as YAML 1.1
// readers would take it for false; the empty path quoted; --rank left out.
TEST(RunConfigYaml, WritesEveryFlagAsParsed) {
  Program program;
  program.parse({"--count", "7", "--rate", "1e-05", "--rank", "1"});
  EXPECT_EQ(dtrain::train::run_config_yaml(program.flags),
            "# probe's flags as parsed; `probe --config FILE` replays the run (flags given beside "
            "it win)\n"
            "count: 7\nrate: 1e-05\nmode: \"off\"\npath: \"\"\nfast: false\n");
}

TEST(RunConfigYaml, ReadsBackToTheSameValues) {
  dtrain::testing::TempDir dir;
  Program first;
  first.parse({"--count", "9", "--rate", "0.25", "--mode", "auto", "--path", "a b/c: d.csv",
               "--slow", "--fast"});
  const std::string file = dir.file("run.yaml");
  write_text(file, dtrain::train::run_config_yaml(first.flags));
  Program again;
  again.parse({"--config", file});
  EXPECT_EQ(again.values.count, 9);
  EXPECT_EQ(again.values.rate, 0.25);
  EXPECT_EQ(again.values.mode, Mode::kAuto);
  EXPECT_EQ(again.values.path, "a b/c: d.csv");
  EXPECT_TRUE(again.values.fast);
  EXPECT_EQ(dtrain::train::run_config_yaml(again.flags),
            dtrain::train::run_config_yaml(first.flags));
}

// The command line wins for the flag it gives, in either order with
// --config, and a switch's other name in a file sets it as on the command line.
TEST(RunConfigYaml, TheCommandLineWins) {
  dtrain::testing::TempDir dir;
  const std::string file = dir.file("run.yaml");
  write_text(file, "count: 5\nmode: on\nslow: false\n");
  for (const auto& args : {std::vector<std::string>{"--config", file, "--count", "2"},
                           std::vector<std::string>{"--count", "2", "--config", file}}) {
    Program program;
    program.parse(args);
    EXPECT_EQ(program.values.count, 2);
    EXPECT_EQ(program.values.mode, Mode::kOn);
    EXPECT_TRUE(program.values.fast) << "slow: false is --fast";
  }
}

// Each refusal is a CLI::ConfigError naming the file and the key.
TEST(RunConfigYaml, RefusesWhatNoFlagTakes) {
  dtrain::testing::TempDir dir;
  const std::string file = dir.file("run.yaml");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cuont: 1\n", "unknown key 'cuont': no flag --cuont; did you mean --count?"},
      {"rank: 1\n", "key 'rank' is not read from a run config"},
      {"config: x.yaml\n", "key 'config' is not read from a run config"},
      {"count: many\n", "key 'count'"},
      {"mode: sideways\n", "key 'mode'"},
      {"fast: perhaps\n", "key 'fast'"},
      {"count: [1, 2]\n", "key 'count': --count takes one value, not a list"},
      {"count:\n", "key 'count' has no value"},
      {"count: 1\ncount: 2\n", "key 'count' given twice"},
      {"- count\n", "not a map of flags to values"},
      {"count: [1\n", "line 2: "}};
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    write_text(file, text);
    Program program;
    try {
      program.parse({"--count", "1", "--config", file});
      ADD_FAILURE() << "accepted";
    } catch (const CLI::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--config " + file + ": " + message), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
