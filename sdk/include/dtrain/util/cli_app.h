// The frame of a command-line program built on dtrain: parse flags with
// CLI11, run, and turn every failure into one line on stderr.
//
//   int main(int argc, char** argv) {
//     CLI::App app{"Train the toy CNN"};
//     Options options; add_flags(app, options);
//     return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options); });
//   }
//
// Every such program answers `--version` with dtrain's build
// (util::build_info().describe()), unless it defines the flag itself.
//
// Exit status: the body's, 0 for --help and --version, 2 for a bad flag ("NAME: error:
// <what was wrong>; see NAME --help"), 1 for an exception from the body
// ("NAME: error: <what()>"). Once this process's rank in its job is known
// (job_rank.h), the lines start "NAME (rank R): error: ".
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace dtrain::util {

int run_cli_app(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace dtrain::util
