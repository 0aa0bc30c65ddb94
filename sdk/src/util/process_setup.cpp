#include "dtrain/util/process_setup.h"

#include <mutex>

#include "dtrain/util/crash_trace.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/logging.h"
#include "dtrain/util/memory.h"

namespace dtrain::util {

namespace {

std::mutex g_setup_mutex;
// Which parts an earlier call set up (under g_setup_mutex).
bool g_logging_done = false;
bool g_crash_traces_done = false;

// The launcher's rank for crash traces of a process that does not log
// through dtrain (init_logging names it otherwise). A variable that cannot
// be read leaves the traces without a rank: init_process_group reports it.
void name_launcher_rank_in_crash_traces() {
  try {
    const LaunchEnv env = read_launch_env();
    set_crash_trace_rank(env.rank, env.local_rank);
  } catch (const Error&) {
  }
}

}  // namespace

void set_up_process(const ProcessSetup& options) {
  std::lock_guard<std::mutex> lock(g_setup_mutex);
  // Logging first, so that the other parts' warnings carry the rank.
  if (options.logging() && !g_logging_done) {
    init_logging();
    g_logging_done = true;
  }
  if (options.crash_traces() && !g_crash_traces_done) {
    if (!g_logging_done) {
      name_launcher_rank_in_crash_traces();
    }
    install_crash_trace();
    g_crash_traces_done = true;
  }
  if (options.retain_freed_host_memory()) {
    retain_freed_host_memory();  // applied once per process by itself
  }
}

}  // namespace dtrain::util
