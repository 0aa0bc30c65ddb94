// How a child process ended, as waitpid reports it: what the launcher
// prints of a worker and what spawn() prints of a forked rank.
#pragma once

#include <string>

namespace dtrain::util {

struct ExitStatus {
  int code = 0;    // exit code when signal == 0
  int signal = 0;  // the signal that killed it, or 0
  bool success() const { return signal == 0 && code == 0; }
  // "exit code 3" or "signal 9 (SIGKILL)".
  std::string describe() const;
  // The shell's convention: the code, or 128 + signal.
  int shell_code() const { return signal != 0 ? 128 + signal : code; }
};

// From the status waitpid() wrote.
ExitStatus exit_status_from_wait(int wait_status);

}  // namespace dtrain::util
