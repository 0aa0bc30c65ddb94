// Parses a command line into a CLI11 app in a test, as main() would.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::testing {

// Parses `args` (after the program's name); CLI11's exceptions pass through.
inline void parse_flags(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "program");
  std::vector<const char*> argv;
  for (const auto& arg : args) {
    argv.push_back(arg.c_str());
  }
  app.parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace dtrain::testing
