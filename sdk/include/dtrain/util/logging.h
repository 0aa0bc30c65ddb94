// dtrain's logging: spdlog, with the rank and local rank in every line.
//
//   [2026-11-29 14:03:12.345] [rank 1/local 1] [info] epoch 3: loss 0.31
//
// The default spdlog logger is set up when the SDK is loaded, from the
// launcher's environment (see launch_env.h) and DTRAIN_LOG_LEVEL (trace,
// debug, info, warn, error, critical, off; default info). Code logs with
// spdlog::info(...) etc. Lines go to stderr, so a program's stdout stays its
// own. set_log_rank() updates the prefix once a process group knows better
// (and the rank that crash traces name, crash_trace.h).
// All functions are thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include <spdlog/spdlog.h>

namespace dtrain::util {

// (Re)installs the default logger from the environment. Called automatically
// when the SDK is loaded; call it again after changing the environment.
void init_logging();

// Puts this rank and local rank in the prefix of every following line, and
// makes `rank` this process's job_rank() (job_rank.h).
void set_log_rank(std::optional<int> rank, std::optional<int> local_rank);

// Parses a level name as DTRAIN_LOG_LEVEL accepts it; throws dtrain::Error naming the bad value.
spdlog::level::level_enum parse_log_level(std::string_view name);

}  // namespace dtrain::util
