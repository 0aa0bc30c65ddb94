#include "dtrain/util/exit_status.h"

#include <sys/wait.h>

#include <cstring>

namespace dtrain::util {

std::string ExitStatus::describe() const {
  if (signal != 0) {
    const char* abbrev = sigabbrev_np(signal);
    return "signal " + std::to_string(signal) + (abbrev ? " (SIG" + std::string(abbrev) + ")" : "");
  }
  return "exit code " + std::to_string(code);
}

ExitStatus exit_status_from_wait(int wait_status) {
  ExitStatus status;
  if (WIFSIGNALED(wait_status)) {
    status.signal = WTERMSIG(wait_status);
  } else if (WIFEXITED(wait_status)) {
    status.code = WEXITSTATUS(wait_status);
  }
  return status;
}

}  // namespace dtrain::util
