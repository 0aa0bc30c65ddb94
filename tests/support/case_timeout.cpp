// Linked into every test program that links LibTorch (dtrain_add_gtest):
// with DTRAIN_TEST_CASE_TIMEOUT=<seconds> in the environment, a test case
// that runs longer ends the program, naming the case.
//
// Note [A time limit for each case]
// CTest runs a whole suite of these programs in one process (Note [One
// process per test suite] in cmake/GTestSuites.cmake), so its TIMEOUT bounds the
// suite: the sum of its cases' limits, minutes for a large suite, and on a
// hang it names no case. So CTest also hands each run the limit of one case
// (cmake/GTestSuites.cmake), and a watcher thread here ends the program
// when a case passes it, printing the case's name and limit first, as a
// test of its own would have been stopped. Like CTest, it first kills the
// processes the case started (the ranks or apps it runs), which would
// otherwise live on, holding the output CTest waits to close. Without the
// variable (a program run by hand) there is no watcher.
//
// The watcher is running before the first case starts, and between checks
// it only waits: a case that forks its ranks must not fork while another
// thread is inside the allocator. GCC 12's AddressSanitizer does not lock
// its allocator around fork(), so a rank forked while the watcher thread
// was still starting (ASan allocates for a new thread) inherited a held
// allocator lock and hung at its first allocation (dtrain_dist_tests
// under scripts/sanitize.sh, in the first case of a suite).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// What the watcher reads. Never freed: the watcher may still wait on it
// while the program's static objects (GoogleTest's listeners among them)
// are destroyed at exit.
struct Watch {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<Clock::time_point> deadline;  // none between cases
  std::string name;                           // the running case
  bool watching = false;                      // the watcher is in its loop
};

// Every process descended from this one, read from /proc (parent first).
std::vector<pid_t> descendants() {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, its parent)
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) {
      continue;
    }
    // "pid (command) state ppid ...": the command may hold spaces and ')'.
    const auto close = line.rfind(')');
    char state = 0;
    long parent = 0;
    if (close != std::string::npos &&
        std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &parent) == 2) {
      parent_of.emplace_back(static_cast<pid_t>(std::atol(line.c_str())),
                             static_cast<pid_t>(parent));
    }
  }
  std::vector<pid_t> found{::getpid()};
  for (std::size_t i = 0; i < found.size(); ++i) {
    for (const auto& [pid, parent] : parent_of) {
      if (parent == found[i]) {
        found.push_back(pid);
      }
    }
  }
  found.erase(found.begin());  // not this process
  return found;
}

[[noreturn]] void watch(Watch* state, long long limit_s) {
  std::unique_lock<std::mutex> lock(state->mutex);
  state->watching = true;
  state->changed.notify_all();
  for (;;) {
    if (!state->deadline) {
      state->changed.wait(lock);
    } else if (Clock::now() < *state->deadline) {
      state->changed.wait_until(lock, *state->deadline);
    } else {
      std::fprintf(stderr,
                   "[  TIMEOUT ] %s ran past its limit of %lld s (DTRAIN_TEST_CASE_TIMEOUT)\n",
                   state->name.c_str(), limit_s);
      std::fflush(nullptr);
      for (pid_t pid : descendants()) {
        ::kill(pid, SIGKILL);
      }
      std::abort();
    }
  }
}

class CaseTimeout : public ::testing::EmptyTestEventListener {
 public:
  explicit CaseTimeout(long long limit_s) : limit_s_(limit_s) {}

  // Before the first case (listing the tests starts no thread): returns
  // once the watcher waits.
  void OnTestProgramStart(const ::testing::UnitTest&) override {
    std::thread(watch, state_, limit_s_).detach();
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->changed.wait(lock, [this] { return state_->watching; });
  }

  void OnTestStart(const ::testing::TestInfo& info) override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->name = std::string(info.test_suite_name()) + "." + info.name();
      state_->deadline = Clock::now() + std::chrono::seconds(limit_s_);
    }
    state_->changed.notify_all();
  }

  void OnTestEnd(const ::testing::TestInfo&) override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->deadline.reset();
    }
    state_->changed.notify_all();
  }

 private:
  const long long limit_s_;
  Watch* const state_ = new Watch;
};

// Registered before main() runs the tests; GoogleTest owns the listener.
// A value that is not a positive whole number of seconds ends the program
// at once, naming it, rather than running every case without a limit.
const bool g_registered = [] {
  const char* limit = std::getenv("DTRAIN_TEST_CASE_TIMEOUT");
  if (limit == nullptr || *limit == '\0') {
    return false;
  }
  char* end = nullptr;
  const long long limit_s = std::strtoll(limit, &end, 10);
  if (*end != '\0' || limit_s <= 0) {
    std::fprintf(
        stderr, "DTRAIN_TEST_CASE_TIMEOUT must be a positive number of seconds, got '%s'\n", limit);
    std::exit(2);
  }
  ::testing::UnitTest::GetInstance()->listeners().Append(new CaseTimeout(limit_s));
  return true;
}();

}  // namespace
