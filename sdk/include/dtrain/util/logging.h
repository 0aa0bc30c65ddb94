// dtrain's logging: spdlog, with the rank and local rank in every line.
//
//   [2026-11-29 14:03:12.345] [rank 1/local 1] [info] epoch 3: loss 0.31
//
// init_logging() makes spdlog's default logger this one, from the
// launcher's environment (see launch_env.h) and DTRAIN_LOG_LEVEL (trace,
// debug, info, warn, error, critical, off; default info); a program opts
// in with util::set_up_process (process_setup.h), as dtrain's programs do,
// and until then spdlog stays as the program left it (Note [Nothing
// happens on load]). Code logs with spdlog::info(...) etc. Lines go to
// stderr, so a program's stdout stays its own. set_log_rank() updates the
// prefix once a process group knows better (and the rank that crash traces
// name, crash_trace.h). All functions are thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include <spdlog/spdlog.h>

namespace dtrain::util {

// (Re)installs the default logger from the environment. set_up_process
// calls it once; call it again after changing the environment.
void init_logging();

// Makes `rank` this process's job_rank() (job_rank.h) and the rank that
// crash traces name, and, once the process chose dtrain's logging
// (init_logging), puts the rank and local rank in the prefix of every
// following line; before that, spdlog's pattern stays the program's.
void set_log_rank(std::optional<int> rank, std::optional<int> local_rank);

// Parses a level name as DTRAIN_LOG_LEVEL accepts it; throws dtrain::Error naming the bad value.
spdlog::level::level_enum parse_log_level(std::string_view name);

}  // namespace dtrain::util
