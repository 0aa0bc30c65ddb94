// The program that ctest unit.case_timeout runs (test_case_timeout.cmake):
// support/case_timeout.cpp's watcher over one case that ends in time and
// one that starts a child process and then outlives its limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

TEST(CaseTimeoutProbe, FinishesInTime) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// Writes its child's pid to $DTRAIN_PROBE_CHILD_PID_FILE, for the script to
// check that the watcher killed it too.
TEST(CaseTimeoutProbe, OutlivesItsLimit) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  const char* pid_file = std::getenv("DTRAIN_PROBE_CHILD_PID_FILE");
  ASSERT_NE(pid_file, nullptr);
  std::ofstream(pid_file) << child << "\n";
  std::this_thread::sleep_for(std::chrono::seconds(60));
}
