// dtrun: start a distributed job on this node, as torchrun does: meet the
// other nodes' agents, start the workers with their ranks in the
// environment, restart the group after failures. See docs/dtrun.md.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "dtrain/launch/agent.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/errors.h"
#include "flags.h"

namespace {

// The launcher's own lines go to stderr, so stdout carries only the workers'.
void setup_logging() {
  auto logger = std::make_shared<spdlog::logger>(
      "dtrun", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [dtrun] [%^%l%$] %v");
  spdlog::level::level_enum level = spdlog::level::info;
  const char* requested = std::getenv("DTRUN_LOG_LEVEL");
  const bool bad = requested && *requested &&
                   spdlog::level::from_str(requested) == spdlog::level::off &&
                   std::string(requested) != "off";
  if (requested && *requested && !bad) {
    level = spdlog::level::from_str(requested);
  }
  logger->set_level(level);
  spdlog::set_default_logger(logger);
  if (bad) {
    spdlog::warn(
        "DTRUN_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, critical, "
        "off; using info",
        requested);
  }
}

}  // namespace

int main(int argc, char** argv) {
  setup_logging();
  CLI::App app{
      "dtrun: start a distributed job on this node (torchrun's flags, in a native program).\n"
      "Run it once per node; the agents meet through a rendezvous store, start\n"
      "--nproc-per-node workers each, and restart the whole group when one fails.",
      "dtrun"};
  dtrain::apps::DtrunFlags flags;
  dtrain::apps::add_dtrun_flags(app, flags);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dtrain::launch::LaunchOptions options;
    try {
      // Checks the program too (and the interpreter, for Python): before anything starts.
      options = dtrain::apps::to_launch_options(app, flags, app.remaining());
    } catch (const dtrain::Error& e) {
      // A flag problem, like CLI11's own: exit status 2, before anything started.
      std::fprintf(stderr, "dtrun: error: %s; see dtrun --help\n", e.what());
      return 2;
    }
    return dtrain::launch::run_agent(options);
  });
}
