#include "dtrain/dist/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/exit_status.h"
#include "dtrain/util/launch_env.h"

namespace dtrain::dist {

namespace {

// Note [Which rank failed first]
// When one rank fails, its peers soon fail too: their collectives break as
// its sockets close. The order in which the parent reaps them says nothing
// of which came first, so each failing rank writes one record, "<rank>
// <what>", to a pipe the parent reads while it waits: one write(2) of at
// most kRecordBytes (under PIPE_BUF, so records never interleave), made
// before the rank exits and so before its peers can see it gone. The first
// record names the cause; a rank that dies without one (a crash) counts in
// the order it is reaped.
constexpr std::size_t kRecordBytes = 512;

// Initialises the default group, runs fn, tears the group down; rank and
// world -1: the launcher's.
void run_rank(const SpawnOptions& options, int rank, int world_size,
              const std::function<void(int, int)>& fn) {
  init_process_group({.backend = options.backend,
                      .init_method = "env://",
                      .rank = rank,
                      .world_size = world_size,
                      .timeout = options.timeout});
  fn(get_rank(), get_world_size());
  destroy_process_group();
}

// The body of a forked rank; never returns. `report`: the pipe's write end.
[[noreturn]] void child(const SpawnOptions& options, int rank, int report,
                        const std::function<void(int, int)>& fn) {
  int code = 0;
  try {
    ::setenv("MASTER_ADDR", options.master_addr.c_str(), 1);
    ::setenv("MASTER_PORT", std::to_string(options.master_port).c_str(), 1);
    run_rank(options, rank, options.nprocs, fn);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    std::string record = std::to_string(rank) + " " + e.what();
    record.resize(std::min(record.size(), kRecordBytes - 1));
    record += '\n';
    [[maybe_unused]] const ssize_t written = ::write(report, record.data(), record.size());
    code = 1;
  }
  std::fflush(nullptr);
  // _exit: the parent's atexit handlers and static destructors are not ours to run.
  ::_exit(code);
}

// The ranks' failure records, read as they come (Note [Which rank failed first]).
class FailureRecords {
 public:
  explicit FailureRecords(int read_end) : fd_(read_end) {}
  // Reads what is there without blocking; true when a record arrived.
  bool drain() {
    char buffer[4096];
    bool any = false;
    for (ssize_t n; (n = ::read(fd_, buffer, sizeof(buffer))) > 0;) {
      text_.append(buffer, static_cast<std::size_t>(n));
      any = true;
    }
    return any;
  }
  void wait_for_data(int timeout_ms) const {
    pollfd readable{.fd = fd_, .events = POLLIN, .revents = 0};
    ::poll(&readable, 1, timeout_ms);
  }
  // The first record as "rank R failed: <what>", and its rank; "" and -1 when none.
  std::pair<std::string, int> first() const {
    if (text_.empty()) {
      return {"", -1};
    }
    const std::string line = text_.substr(0, text_.find('\n'));
    const std::size_t space = line.find(' ');
    return {"rank " + line.substr(0, space) + " failed: " + line.substr(space + 1),
            std::atoi(line.c_str())};
  }

 private:
  int fd_;
  std::string text_;
};

// Waits for every rank; at the first failure stops the rest (they would
// wait for it until their timeout), as torch.multiprocessing.spawn does,
// then throws naming the first rank that failed and those that failed
// after it (ranks stopped here are not named).
void join_ranks(std::vector<pid_t> pids, FailureRecords& records) {
  bool stopping = false;
  // Stops every rank still running but `failed`, which ends on its own.
  auto stop_the_others = [&](int failed) {
    if (!stopping) {
      stopping = true;
      for (std::size_t rank = 0; rank < pids.size(); ++rank) {
        if (pids[rank] > 0 && static_cast<int>(rank) != failed) {
          ::kill(pids[rank], SIGTERM);
        }
      }
    }
  };
  std::vector<std::string> exits;  // failed ranks, in the order reaped
  std::vector<int> exit_ranks;
  for (std::size_t left = pids.size(); left > 0;) {
    if (records.drain()) {
      stop_the_others(records.first().second);
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0) {
      records.wait_for_data(/*timeout_ms=*/50);
      continue;
    }
    if (pid < 0) {
      break;
    }
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) {
      continue;  // a child this call did not start
    }
    const int rank = static_cast<int>(it - pids.begin());
    *it = 0;
    --left;
    const util::ExitStatus ended = util::exit_status_from_wait(status);
    if (ended.success()) {
      continue;
    }
    if (!(stopping && ended.signal == SIGTERM)) {
      exits.push_back("rank " + std::to_string(rank) + " ended with " + ended.describe());
      exit_ranks.push_back(rank);
    }
    stop_the_others(rank);
  }
  records.drain();
  auto [cause, cause_rank] = records.first();
  if (cause_rank < 0 && exits.empty()) {
    return;
  }
  if (cause_rank < 0) {
    cause = exits.front();
    cause_rank = exit_ranks.front();
  }
  std::string after;
  for (std::size_t i = 0; i < exits.size(); ++i) {
    if (exit_ranks[i] != cause_rank) {
      after += (after.empty() ? "" : "; ") + exits[i];
    }
  }
  if (pids.size() > 1) {
    cause += " (the first rank to fail; the others were stopped" +
             (after.empty() ? "" : "; failed after it: " + after) + ")";
  }
  throw Error("spawn: " + cause);
}

}  // namespace

void spawn(const SpawnOptions& options, const std::function<void(int rank, int size)>& fn) {
  DTRAIN_CHECK(options.nprocs >= 1, "spawn: nprocs must be >= 1, got ", options.nprocs);
  DTRAIN_CHECK(options.master_port >= 1 && options.master_port <= 65535,
               "spawn: master_port must be in 1..65535, got ", options.master_port);
  DTRAIN_CHECK(!options.master_addr.empty(), "spawn: master_addr is empty");
  int report[2];
  DTRAIN_CHECK(::pipe2(report, O_CLOEXEC | O_NONBLOCK) == 0,
               "spawn: cannot make a pipe: ", std::strerror(errno));
  // The children's end blocks: a record is written whole.
  ::fcntl(report[1], F_SETFL, 0);
  std::fflush(nullptr);  // or the children would print the parent's buffered output again
  std::vector<pid_t> pids;
  for (int rank = 0; rank < options.nprocs; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(report[0]);
      child(options, rank, report[1], fn);
    }
    if (pid < 0) {
      for (pid_t started : pids) {
        ::kill(started, SIGTERM);
        ::waitpid(started, nullptr, 0);
      }
      ::close(report[0]);
      ::close(report[1]);
      DTRAIN_CHECK(false, "spawn: cannot fork rank ", rank);
    }
    pids.push_back(pid);
  }
  ::close(report[1]);
  FailureRecords records(report[0]);
  try {
    join_ranks(pids, records);
  } catch (...) {
    ::close(report[0]);
    throw;
  }
  ::close(report[0]);
}

void spawn_or_join(const SpawnOptions& options, const std::function<void(int rank, int size)>& fn) {
  const util::LaunchEnv launch = util::read_launch_env();
  if (!launch.rank.has_value()) {
    spawn(options, fn);
    return;
  }
  // Started by a launcher: be that one rank. srun sets no MASTER_ADDR/PORT,
  // so the options fill in without overriding a launcher's; under OpenMPI's
  // mpirun the ranks find the store through MPI instead (Note [The store's
  // address through MPI]), unless MASTER_PORT was exported.
  if (launch.source != "openmpi") {
    ::setenv("MASTER_ADDR", options.master_addr.c_str(), 0);
    ::setenv("MASTER_PORT", std::to_string(options.master_port).c_str(), 0);
  }
  run_rank(options, -1, -1, fn);
}

}  // namespace dtrain::dist
