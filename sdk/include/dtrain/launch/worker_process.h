// One worker: a child process in a process group of its own, whose stdout
// and stderr come back through pipes, and which dies with the launcher.
//
// Note [No orphans]: every worker is the leader of its own process group
// (so a signal reaches the programs it started too) and asks the kernel
// to SIGKILL it when the launcher dies (PR_SET_PDEATHSIG), so even a
// launcher killed with SIGKILL leaves no worker behind. When a worker
// exits, the rest of its group is killed before it is reaped: while the
// unreaped leader holds its pid, the group id cannot name anyone else.
// A program that leaves its group (setsid, a daemon's double fork) is
// caught too: the launcher is a child subreaper, so such orphans become its
// children, and kill_orphans() ends them once the workers are gone.
//
// Not thread-safe; spawn from the thread that lives as long as the
// workers (PR_SET_PDEATHSIG fires when the *thread* that forked exits).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "dtrain/launch/failure.h"

namespace dtrain::launch {

// Makes this process the reaper of its descendants' orphans (Note [No orphans]).
void become_subreaper();

// SIGKILLs and reaps every child of this process (call when no worker of
// the round runs: what is left are orphans of workers). Returns how many.
int kill_orphans();

// The executable `name` names: itself when it contains '/', else the first
// match on PATH. Throws dtrain::Error when there is none.
std::string resolve_program(const std::string& name);

class WorkerProcess {
 public:
  // Starts `path` with argv and envp ("KEY=VALUE"). Throws dtrain::Error
  // when fork or pipe fail; a failing exec shows as exit code 127 with the
  // reason on the worker's stderr.
  WorkerProcess(const std::string& path, const std::vector<std::string>& argv,
                const std::vector<std::string>& envp);
  ~WorkerProcess();  // kills and reaps a worker still running
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Read ends of the worker's stdout and stderr; -1 once taken.
  int take_stdout_fd();
  int take_stderr_fd();

  // The exit status once the worker has ended (reaping it), else nullopt. Never blocks.
  std::optional<util::ExitStatus> poll();
  const std::optional<util::ExitStatus>& status() const { return status_; }
  bool running() const { return !status_.has_value(); }
  // Sends `sig` to the worker's whole process group (no-op once reaped).
  void signal_group(int sig);
  // A descriptor that becomes readable when the worker ends (a pidfd), so a
  // poll can wake on exits; -1 where the kernel has no pidfd_open (< 5.3).
  int exit_fd() const { return exit_fd_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  int exit_fd_ = -1;
  std::optional<util::ExitStatus> status_;
};

}  // namespace dtrain::launch
