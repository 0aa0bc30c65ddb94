// A program started in the background for a test: its stdout and stderr go
// to one file, it can be signalled, and waiting for it has a deadline (a
// process still running then is SIGKILLed, so no test hangs).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace dtrain::testing {

class BackgroundProcess {
 public:
  // argv[0] is run as given (no PATH search); `env` entries are set on top
  // of this process's environment.
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& output_path,
                    const std::map<std::string, std::string>& env = {});
  ~BackgroundProcess();  // kills and reaps the process if it still runs
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Exit code, 128 + signal when killed; at the deadline the process is
  // SIGKILLed and -1 returned.
  int wait(std::chrono::milliseconds deadline);
  bool running();
  // Everything it wrote so far.
  std::string output() const;

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  bool reaped_ = false;
  std::string output_path_;
};

// Waits until `predicate` holds, polling; false at the deadline.
template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds deadline);

// True while a process with this pid exists (and is not a zombie).
bool process_alive(pid_t pid);

// The whole content of a file, "" when it does not exist.
std::string read_text(const std::string& path);

}  // namespace dtrain::testing

#include <thread>

template <typename Predicate>
bool dtrain::testing::eventually(Predicate predicate, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (predicate()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return predicate();
}
