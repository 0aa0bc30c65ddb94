#include "dtrain/util/cli_app.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "dtrain/util/build_info.h"
#include "dtrain/util/cli_help.h"
#include "dtrain/util/job_rank.h"

namespace dtrain::util {

namespace {

// Error text on one line: a multi-line message would be cut apart by log
// readers. LibTorch's errors (c10::Error) end in the C++ stack that raised
// them, which means nothing to a user: it is cut off.
std::string one_line(std::string text) {
  if (const auto stack = text.find("\nException raised from "); stack != std::string::npos) {
    text.resize(stack);
  }
  for (char& c : text) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  return text;
}

// "NAME", or "NAME (rank R)" once this process's rank in its job is known:
// every process of a job may fail at once, and the rank tells their lines
// apart.
std::string error_source(const std::string& name) {
  const std::optional<int> rank = job_rank();
  return rank ? name + " (rank " + std::to_string(*rank) + ")" : name;
}

}  // namespace

int run_cli_app(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const std::string name = app.get_name().empty() ? std::string(argv[0]) : app.get_name();
  if (app.get_option_no_throw("--version") == nullptr) {
    CLI::Option* version =
        app.set_version_flag("--version", build_info().describe(), "Print dtrain's build and exit");
    // Beside the help flags where the program groups its flags by topic.
    if (const CLI::Option* help = app.get_option_no_throw("--help")) {
      version->group(help->get_group());
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::Success&) {
    return 0;  // the help was printed by its flag (cli_help.h)
  } catch (const CLI::ExtrasError&) {
    // CLI11's own message lists them last to first ("3 --epoch").
    std::string extras;
    for (const std::string& arg : app.remaining()) {
      extras += (extras.empty() ? "" : " ") + arg;
    }
    const std::string hint = app.remaining().empty() ? "" : did_you_mean(app, app.remaining()[0]);
    std::fprintf(stderr, "%s: error: unexpected argument(s): %s%s; see %s --help\n",
                 error_source(name).c_str(), extras.c_str(), hint.c_str(), name.c_str());
    return 2;
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "%s: error: %s; see %s --help\n", error_source(name).c_str(),
                 one_line(error.what()).c_str(), name.c_str());
    return 2;
  }
  try {
    return body();
  } catch (const std::exception& error) {
    spdlog::default_logger()->flush();
    std::fprintf(stderr, "%s: error: %s\n", error_source(name).c_str(),
                 one_line(error.what()).c_str());
    return 1;
  }
}

}  // namespace dtrain::util
