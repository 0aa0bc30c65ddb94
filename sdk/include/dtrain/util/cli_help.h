// Help on one screen for programs with many flags: `--help` shows the
// common flags and names the topics (the CLI11 groups of the rest),
// `--help TOPIC` shows one topic whole, `--help-all` every flag.
//
//   app.add_option("--epochs", epochs, "...")->group("Training");
//   ...
//   dtrain::util::add_topic_help(app, {"--epochs", "--batch-size", "--device"});
//   return dtrain::util::run_cli_app(app, argc, argv, body);
//
// A long --help scrolls the flags a newcomer needs off the screen, so the
// plain help keeps to the common ones and says where the rest are. Help is
// printed as soon as its flag is parsed, before the other flags are
// checked, and the program exits 0 (run_cli_app); an unknown topic is a
// bad flag that names the topics.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::util {

// Replaces `app`'s help flag; call once every flag is added. `common`
// names flags by any of their names ("--epochs").
void add_topic_help(CLI::App& app, std::vector<std::string> common);

// "; did you mean --epochs?" when `word` (an unknown flag, "--epoch" or
// "--epoch=3") is a typo of one of `app`'s long flags (at most two
// letters' edits, or the start of exactly one flag), else "".
std::string did_you_mean(const CLI::App& app, const std::string& word);

// The help text of `topic` ("" for the common flags, "all" for every
// flag), as --help prints it; throws CLI::ValidationError for an unknown
// topic. Exposed for tests.
std::string topic_help(CLI::App& app, const std::vector<std::string>& common,
                       const std::string& topic);

}  // namespace dtrain::util
