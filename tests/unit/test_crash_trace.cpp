// dtrain::util crash traces: a fatal signal writes the rank, the signal and
// the native stack to stderr, then the process dies of that signal. Each
// child sets them up as a program does (util::set_up_process): loading the
// SDK installs nothing (Note [Nothing happens on load]).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/util/crash_trace.h"
#include "dtrain/util/process_setup.h"
#include "test_support.h"

namespace {

using dtrain::testing::ChildEnd;
using dtrain::testing::run_in_child;

// Crash traces alone, as a program that wants them asks for them.
void set_up_crash_traces() {
  dtrain::util::set_up_process(
      dtrain::util::ProcessSetup().logging(false).retain_freed_host_memory(false));
}

bool died_of(const ChildEnd& end, int signal) {
  return WIFSIGNALED(end.status) && WTERMSIG(end.status) == signal;
}

// The header line, then at least one frame ("...[0x<address>]").
void expect_trace(const ChildEnd& end, const std::string& header) {
  const size_t at = end.stderr_text.find(header);
  ASSERT_NE(at, std::string::npos) << end.stderr_text;
  EXPECT_NE(end.stderr_text.find("[0x", at + header.size()), std::string::npos) << end.stderr_text;
}

// The file name of the object that holds this test's code, as dladdr gives it.
std::string this_object() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&died_of), &info), 0);
  const std::string path = info.dli_fname != nullptr ? info.dli_fname : "";
  return path.substr(path.rfind('/') + 1);
}

TEST(CrashTrace, SegfaultPrintsRankSignalAndStackThenDiesOfIt) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(3, 1);
    // A null pointer the compiler cannot see through: a real fault.
    volatile int* nowhere = reinterpret_cast<volatile int*>(std::getenv("DTRAIN_NO_SUCH_VARIABLE"));
    *nowhere = 1;
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  expect_trace(end, "[rank 3/local 1] fatal signal 11 (SIGSEGV); native stack:\n");
  // Note [Where a fault happened]: the address touched, and the faulting
  // instruction's place in this program.
  EXPECT_NE(end.stderr_text.find("[rank 3/local 1] fault at address 0x0, pc 0x"), std::string::npos)
      << end.stderr_text;
  EXPECT_NE(end.stderr_text.find(" (" + this_object() + "+0x"), std::string::npos)
      << end.stderr_text;
}

// Recurses until the stack runs out (the depth is never reached: the
// variable is unset), each frame kept alive by the sum after the call.
int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  const char* limit = std::getenv("DTRAIN_NO_SUCH_VARIABLE");
  if (limit != nullptr && depth > std::atoi(limit)) {
    return frame[0];
  }
  return recurse(depth + 1) + frame[0];
}

// A stack overflow faults with the stack pointer at the guard page: the
// handler runs on its alternate stack and must not read the exhausted one,
// so the whole trace is still written.
TEST(CrashTrace, AStackOverflowIsTraced) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(2, 1);
    return recurse(0) == 0;  // not reached: the child ends inside
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  expect_trace(end, "[rank 2/local 1] fatal signal 11 (SIGSEGV); native stack:\n");
  EXPECT_NE(end.stderr_text.find("[rank 2/local 1] fault at address 0x"), std::string::npos)
      << end.stderr_text;
}

// A call through a null function pointer jumps to an address in no object,
// where the unwinder stops at the signal trampoline: the fault line names
// the caller from the return address the call left.
TEST(CrashTrace, ACallThroughANullPointerNamesItsCaller) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(1, 0);
    using Function = void (*)();
    Function volatile nowhere = reinterpret_cast<Function>(std::getenv("DTRAIN_NO_SUCH_VARIABLE"));
    nowhere();
    return false;  // not reached: the child ends above (and no tail call)
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  expect_trace(end, "[rank 1/local 0] fatal signal 11 (SIGSEGV); native stack:\n");
  const std::string fault =
      "[rank 1/local 0] fault at address 0x0, pc 0x0 in no loaded object (a call through a bad "
      "pointer?), return address 0x";
  const std::size_t at = end.stderr_text.find(fault);
  ASSERT_NE(at, std::string::npos) << end.stderr_text;
  const std::size_t line_end = end.stderr_text.find('\n', at);
  EXPECT_NE(end.stderr_text.substr(at, line_end - at).find(" (" + this_object() + "+0x"),
            std::string::npos)
      << end.stderr_text;
}

TEST(CrashTrace, ACrashOnAnotherThreadIsTraced) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(0, 0);
    std::thread worker([] {
      volatile int* nowhere =
          reinterpret_cast<volatile int*>(std::getenv("DTRAIN_NO_SUCH_VARIABLE"));
      *nowhere = 1;
    });
    worker.join();
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  expect_trace(end, "[rank 0/local 0] fatal signal 11 (SIGSEGV); native stack:\n");
}

// Threads running the same bug fault together (OpenMP workers do): one
// whole trace, then the process dies of the signal, without hanging.
TEST(CrashTrace, ThreadsFaultingTogetherLeaveOneWholeTrace) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    alarm(20);  // a hang would end as SIGALRM, and fail below
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([] {
        volatile int* nowhere =
            reinterpret_cast<volatile int*>(std::getenv("DTRAIN_NO_SUCH_VARIABLE"));
        *nowhere = 1;
      });
    }
    for (std::thread& worker : workers) {
      worker.join();
    }
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  expect_trace(end, "fatal signal 11 (SIGSEGV); native stack:\n");
  const std::string header = "fatal signal";
  EXPECT_EQ(end.stderr_text.find(header, end.stderr_text.find(header) + 1), std::string::npos)
      << end.stderr_text;
}

TEST(CrashTrace, AbortIsTracedWithoutARank) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(std::nullopt, std::nullopt);
    std::abort();
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGABRT)) << end.status;
  expect_trace(end, "[rank -/local -] fatal signal 6 (SIGABRT); native stack:\n");
  EXPECT_EQ(end.stderr_text.find("fault at"), std::string::npos)
      << "an abort has no faulting instruction: " << end.stderr_text;
}

// A program that did not ask for them dies as it would without dtrain.
TEST(CrashTrace, NotSetUpLeavesTheDefault) {
  const ChildEnd end = run_in_child([] {
    dtrain::util::set_crash_trace_rank(0, 0);  // as init_process_group does
    std::raise(SIGSEGV);
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  EXPECT_EQ(end.stderr_text, "");
}

TEST(CrashTrace, SwitchedOffLeavesTheDefault) {
  const ChildEnd end = run_in_child([] {
    setenv("DTRAIN_CRASH_TRACE", "0", 1);
    set_up_crash_traces();
    std::raise(SIGSEGV);
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGSEGV)) << end.status;
  EXPECT_EQ(end.stderr_text, "");
}

// An exception that escapes a thread's function ends the process through
// std::terminate: it is named with its type, message and the rank, then the
// abort is traced as above.
TEST(CrashTrace, AnUncaughtExceptionIsNamedWithTheRank) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(2, 0);
    std::thread worker([] { throw std::invalid_argument("the library's own words"); });
    worker.join();
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGABRT)) << end.status;
  expect_trace(end,
               "[rank 2/local 0] terminate: uncaught std::invalid_argument: the library's own "
               "words\n");
  expect_trace(end, "[rank 2/local 0] fatal signal 6 (SIGABRT); native stack:\n");
  // Not the C++ runtime's own report besides ours.
  EXPECT_EQ(end.stderr_text.find("terminate called after throwing"), std::string::npos)
      << end.stderr_text;
}

std::string explain_library_words(const std::string& what) {
  return what.find("library's own") != std::string::npos ? "what that means for you" : "";
}

std::string explain_nothing(const std::string&) {
  return "";
}

TEST(CrashTrace, ExplainersThatRecogniseTheMessageAddALine) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(0, 0);
    dtrain::util::add_uncaught_explainer(explain_nothing);
    dtrain::util::add_uncaught_explainer(explain_library_words);
    dtrain::util::add_uncaught_explainer(explain_library_words);  // once is enough
    std::thread worker([] { throw std::runtime_error("the library's own words"); });
    worker.join();
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGABRT)) << end.status;
  const std::string named =
      "[rank 0/local 0] terminate: uncaught std::runtime_error: the "
      "library's own words\n[rank 0/local 0] what that means for you\n";
  EXPECT_NE(end.stderr_text.find(named), std::string::npos) << end.stderr_text;
  const std::string line = "what that means for you";
  EXPECT_EQ(end.stderr_text.find(line, end.stderr_text.find(line) + 1), std::string::npos)
      << end.stderr_text;
}

TEST(CrashTrace, TerminateWithoutAnExceptionIsNamed) {
  const ChildEnd end = run_in_child([] {
    set_up_crash_traces();
    dtrain::util::set_crash_trace_rank(1, 1);
    std::terminate();
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(died_of(end, SIGABRT)) << end.status;
  expect_trace(end, "[rank 1/local 1] terminate called without an active exception\n");
}

void own_terminate() {
  constexpr char kText[] = "the program's own terminate handler\n";
  (void)!write(STDERR_FILENO, kText, sizeof kText - 1);
  _exit(9);
}

TEST(CrashTrace, AProgramsOwnTerminateHandlerStays) {
  const ChildEnd end = run_in_child([] {
    std::set_terminate(own_terminate);
    set_up_crash_traces();
    std::terminate();
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 9) << end.status;
  EXPECT_EQ(end.stderr_text, "the program's own terminate handler\n");
}

void own_handler(int) {
  constexpr char kText[] = "the program's own handler\n";
  (void)!write(STDERR_FILENO, kText, sizeof kText - 1);
  _exit(7);
}

TEST(CrashTrace, AProgramsOwnHandlerStays) {
  const ChildEnd end = run_in_child([] {
    std::signal(SIGFPE, own_handler);
    set_up_crash_traces();
    std::raise(SIGFPE);
    return false;  // not reached: the child ends above
  });
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 7) << end.status;
  EXPECT_EQ(end.stderr_text, "the program's own handler\n");
}

}  // namespace
