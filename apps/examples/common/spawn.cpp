#include "spawn.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/launch_env.h"

namespace dtrain::examples {

namespace {

// Initialises the default group, runs fn, tears the group down.
void run_rank(const SpawnOptions& options, int rank, int world_size,
              const std::function<void(int, int)>& fn) {
  dist::init_process_group({.backend = options.backend,
                            .init_method = "env://",
                            .rank = rank,
                            .world_size = world_size});
  fn(dist::get_rank(), dist::get_world_size());
  dist::destroy_process_group();
}

// The body of a forked rank; never returns.
[[noreturn]] void child(const SpawnOptions& options, int rank,
                        const std::function<void(int, int)>& fn) {
  int code = 0;
  try {
    // As the seed's init_process does, in code.
    ::setenv("MASTER_ADDR", options.master_addr.c_str(), 1);
    ::setenv("MASTER_PORT", std::to_string(options.master_port).c_str(), 1);
    run_rank(options, rank, options.world_size, fn);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    code = 1;
  }
  std::fflush(nullptr);
  // _exit: the parent's atexit handlers and static destructors are not ours to run.
  ::_exit(code);
}

// Waits for every child; when one fails, stops the rest (they would wait for
// it until their timeout), as torch.multiprocessing.spawn does.
int join_children(std::vector<pid_t> pids) {
  std::string failures;
  while (!pids.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      break;
    }
    std::size_t rank = 0;
    for (; rank < pids.size() && pids[rank] != pid; ++rank) {
    }
    if (rank == pids.size()) {
      continue;
    }
    pids[rank] = 0;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      failures += std::string(failures.empty() ? " " : "; ") + "rank " + std::to_string(rank) +
                  (WIFEXITED(status) ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                     : " was killed by signal " + std::to_string(WTERMSIG(status)));
      for (pid_t other : pids) {
        if (other > 0) {
          ::kill(other, SIGTERM);
        }
      }
    }
    bool any_left = false;
    for (pid_t other : pids) {
      any_left = any_left || other > 0;
    }
    if (!any_left) {
      break;
    }
  }
  DTRAIN_CHECK(failures.empty(), "a rank failed:", failures);
  return 0;
}

}  // namespace

void add_flags(CLI::App& app, SpawnOptions& options) {
  app.add_option("--world-size", options.world_size,
                 "processes to start when no launcher started this one")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--backend", options.backend, "process-group backend")
      ->check(CLI::IsMember({"gloo", "nccl", "mpi", "auto"}))
      ->capture_default_str();
  app.add_option("--master-addr", options.master_addr,
                 "rendezvous address when this program starts the ranks")
      ->capture_default_str();
  app.add_option("--master-port", options.master_port,
                 "rendezvous port when this program starts the ranks")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
}

int spawn_or_join(const SpawnOptions& options, const std::function<void(int rank, int size)>& fn) {
  if (util::read_launch_env().rank.has_value()) {
    // Started by a launcher: be that one rank. mpirun and srun set no
    // MASTER_ADDR/PORT, so fall back to the flags without overriding a launcher's.
    ::setenv("MASTER_ADDR", options.master_addr.c_str(), 0);
    ::setenv("MASTER_PORT", std::to_string(options.master_port).c_str(), 0);
    run_rank(options, -1, -1, fn);
    return 0;
  }
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < options.world_size; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      child(options, rank, fn);
    }
    if (pid < 0) {
      for (pid_t started : pids) {
        ::kill(started, SIGTERM);
        ::waitpid(started, nullptr, 0);
      }
      DTRAIN_CHECK(false, "cannot fork rank ", rank);
    }
    pids.push_back(pid);
  }
  return join_children(pids);
}

}  // namespace dtrain::examples
