#include "multi_process.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

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

namespace {

// The first port the kernel hands to outgoing connections (32768 unless the
// machine says otherwise).
int ephemeral_range_start() {
  int start = 32768;
  if (std::FILE* range = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(range, "%d", &start) != 1) {
      start = 32768;
    }
    std::fclose(range);
  }
  return start;
}

bool can_listen_on(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return bound;
}

}  // namespace

// A random port below the ephemeral range: a port the kernel picked (bind to
// port 0) is one it may hand to the next outgoing connection on the machine
// before the test's server listens on it, and the many connections of a
// collective test made that happen.
std::uint16_t free_port() {
  const int high = ephemeral_range_start();
  const int low = high > 11000 ? 10000 : 1024;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(low, high - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port = static_cast<std::uint16_t>(pick(random));
    if (can_listen_on(port)) {
      return port;
    }
  }
  throw std::runtime_error("free_port: no free port in [" + std::to_string(low) + ", " +
                           std::to_string(high) + ") after 200 tries");
}

}  // namespace dtrain::testing
