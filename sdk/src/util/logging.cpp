#include "dtrain/util/logging.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "dtrain/util/crash_trace.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/job_rank.h"
#include "dtrain/util/launch_env.h"

namespace dtrain::util {

namespace {

std::mutex g_logging_mutex;
// Whether the process chose dtrain's logging (init_logging); until then
// set_log_rank leaves spdlog as the program set it. Under g_logging_mutex.
bool g_dtrain_logging = false;

std::string rank_text(std::optional<int> value) {
  return value ? std::to_string(*value) : std::string("-");
}

void apply_pattern(std::optional<int> rank, std::optional<int> local_rank) {
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [rank " + rank_text(rank) + "/local " +
                      rank_text(local_rank) + "] [%^%l%$] %v");
}

}  // namespace

spdlog::level::level_enum parse_log_level(std::string_view name) {
  auto level = spdlog::level::from_str(std::string(name));
  // from_str maps unknown names to "off"; only the literal "off" may mean off.
  DTRAIN_CHECK(level != spdlog::level::off || name == "off", "DTRAIN_LOG_LEVEL='", name,
               "' is not one of trace, debug, info, warn, error, critical, off");
  return level;
}

void init_logging() {
  std::lock_guard<std::mutex> lock(g_logging_mutex);
  // Not registered by name, so a later init_logging() can simply replace it.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "dtrain", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));

  LaunchEnv env;
  std::string env_problem;
  try {
    env = read_launch_env();
  } catch (const Error& e) {
    env_problem = e.what();
  }
  g_dtrain_logging = true;
  set_crash_trace_rank(env.rank, env.local_rank);
  apply_pattern(env.rank, env.local_rank);

  spdlog::level::level_enum level = spdlog::level::info;
  std::string level_problem;
  if (const char* requested = std::getenv("DTRAIN_LOG_LEVEL"); requested && *requested) {
    try {
      level = parse_log_level(requested);
    } catch (const Error& e) {
      level_problem = e.what();
    }
  }
  spdlog::set_level(level);
  // Logging must work even when its own configuration is wrong: say so and go on.
  if (!level_problem.empty()) {
    spdlog::warn("{}; using info", level_problem);
  }
  if (!env_problem.empty()) {
    spdlog::warn("{}; logging without a rank", env_problem);
  }
}

void set_log_rank(std::optional<int> rank, std::optional<int> local_rank) {
  std::lock_guard<std::mutex> lock(g_logging_mutex);
  set_job_rank(rank);
  set_crash_trace_rank(rank, local_rank);
  if (g_dtrain_logging) {
    apply_pattern(rank, local_rank);
  }
}

}  // namespace dtrain::util
