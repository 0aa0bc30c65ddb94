#include "multi_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <thread>

#include "dtrain/store/socket.h"

namespace dtrain::testing {

std::vector<int> run_ranks(int world_size, const std::function<void(int rank)>& body,
                           std::chrono::seconds deadline) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world_size; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      break;
    }
    if (pid == 0) {
      int code = 0;
      try {
        body(rank);
        code = ::testing::Test::HasFailure() ? 1 : 0;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: uncaught exception: %s\n", rank, e.what());
        code = 2;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);  // no atexit handlers or static destructors of the parent's copy
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(pids.size(), -1);
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::size_t remaining = pids.size();
  while (remaining > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (codes[i] != -1) {
        continue;
      }
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --remaining;
      }
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > until) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (codes[i] == -1) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], nullptr, 0);
          codes[i] = 128 + SIGKILL;
          std::fprintf(stderr, "rank %zu was still running at the deadline and was killed\n", i);
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return codes;
}

std::uint16_t free_port() {
  return store::net::free_port();
}

}  // namespace dtrain::testing
