// Note [Nothing happens on load] (dtrain/util/process_setup.h): a program
// that links every library of dtrain, and even makes and ends a process
// group, keeps spdlog's own default logger, the default actions of the
// fatal signals, the C++ runtime's terminate handler and glibc's malloc
// settings; util::set_up_process changes each of them, once.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cxxabi.h>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/job_rank.h"
#include "dtrain/util/logging.h"
#include "dtrain/util/process_setup.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using dtrain::util::ProcessSetup;
using Settings = std::vector<std::string>;

constexpr std::pair<int, const char*> kFatalSignals[] = {{SIGSEGV, "SIGSEGV"},
                                                         {SIGBUS, "SIGBUS"},
                                                         {SIGILL, "SIGILL"},
                                                         {SIGFPE, "SIGFPE"},
                                                         {SIGABRT, "SIGABRT"}};

// What `body` writes to file descriptor `fd` (1 or 2), through a temporary file.
std::string written_to(int fd, const std::function<void()>& body) {
  std::fflush(nullptr);
  std::FILE* file = std::tmpfile();
  const int saved = ::dup(fd);
  ::dup2(::fileno(file), fd);
  body();
  std::fflush(nullptr);
  ::dup2(saved, fd);
  ::close(saved);
  std::string text;
  std::rewind(file);
  for (int c; (c = std::fgetc(file)) != EOF;) {
    text.push_back(static_cast<char>(c));
  }
  std::fclose(file);
  return text;
}

// One line through spdlog's default logger: what it writes to stdout and to stderr.
struct Logged {
  std::string out;
  std::string err;
};

Logged log_a_line() {
  Logged logged;
  logged.out = written_to(STDOUT_FILENO, [&] {
    logged.err = written_to(STDERR_FILENO, [] { spdlog::info("a line"); });
  });
  return logged;
}

// True when glibc maps a block above its largest mmap threshold (32 MiB)
// on its own, as its defaults do; false under retain_freed_host_memory,
// which takes every block from the heap.
bool large_blocks_are_mapped() {
  static void* volatile block;  // used, so that the pair is not optimised away
  const std::size_t before = ::mallinfo2().hblks;
  block = std::malloc(64u << 20);
  const bool mapped = ::mallinfo2().hblks > before;
  std::free(block);
  block = nullptr;
  return mapped;
}

// The process-wide settings that differ from those of a process that never
// chose any: "logger", a signal's name, "terminate handler", "alternate
// signal stack", "malloc".
Settings changed_settings() {
  Settings changed;
  const std::shared_ptr<spdlog::logger> logger = spdlog::default_logger();
  static const std::regex kSpdlogsOwnLine(
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[info\] a line\n)");
  const Logged logged = log_a_line();
  if (logger->name() != "" || spdlog::get_level() != spdlog::level::info || !logged.err.empty() ||
      !std::regex_match(logged.out, kSpdlogsOwnLine)) {
    changed.push_back("logger");
  }
  for (const auto& [signal, name] : kFatalSignals) {
    struct sigaction action {};
    if (::sigaction(signal, nullptr, &action) != 0 || (action.sa_flags & SA_SIGINFO) != 0 ||
        action.sa_handler != SIG_DFL) {
      changed.push_back(name);
    }
  }
  if (std::get_terminate() != __gnu_cxx::__verbose_terminate_handler) {
    changed.push_back("terminate handler");
  }
  stack_t alternate{};
  if (::sigaltstack(nullptr, &alternate) != 0 || (alternate.ss_flags & SS_DISABLE) == 0) {
    changed.push_back("alternate signal stack");
  }
  if (!large_blocks_are_mapped()) {
    changed.push_back("malloc");
  }
  return changed;
}

const Settings kLogging = {"logger"};
const Settings kCrashTraces = {"SIGSEGV",
                               "SIGBUS",
                               "SIGILL",
                               "SIGFPE",
                               "SIGABRT",
                               "terminate handler",
                               "alternate signal stack"};
const Settings kHostMemory = {"malloc"};

Settings all_of(std::initializer_list<Settings> parts) {
  Settings all;
  for (const Settings& part : parts) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::string text_of(const Settings& settings) {
  std::string text = "{";
  for (const std::string& setting : settings) {
    text += (text.size() > 1 ? ", " : "") + setting;
  }
  return text + "}";
}

// Runs `body` in a forked child (what it changes stays there); it writes
// what went wrong to stderr, and the test fails with those lines.
void expect_in_child(const std::function<void(std::string& problems)>& body) {
  std::fflush(nullptr);
  const dtrain::testing::ChildEnd end = dtrain::testing::run_in_child([&] {
    std::string problems;
    body(problems);
    std::fputs(problems.c_str(), stderr);
    return problems.empty();
  });
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0)
      << "status " << end.status << ":\n"
      << end.stderr_text;
}

void expect_changed(std::string& problems, const std::string& when, const Settings& expected) {
  const Settings changed = changed_settings();
  if (changed != expected) {
    problems += when + ": changed " + text_of(changed) + ", expected " + text_of(expected) + "\n";
  }
}

// A launcher's variables would put a rank in the prefix: none here.
void forget_the_launcher() {
  for (const char* name : {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                           "DTRAIN_LOG_LEVEL", "DTRAIN_CRASH_TRACE", "DTRAIN_HOST_MEMORY"}) {
    ::unsetenv(name);
  }
}

TEST(ProcessSetup, LoadingDtrainChangesNothing) {
  // Every library of dtrain::dtrain is loaded in this program.
  for (const char* library : {"libdtrain_sdk.so.0", "libdtrain_models.so.0",
                              "libdtrain_datasets.so.0", "libdtrain_kernels.so.0"}) {
    EXPECT_NE(::dlopen(library, RTLD_NOW | RTLD_NOLOAD), nullptr) << library << " is not loaded";
  }
  EXPECT_EQ(changed_settings(), Settings{});
}

// init_process_group records the rank (the job's, and the one crash traces
// name) but changes no setting; destroy_process_group neither.
TEST(ProcessSetup, AProcessGroupChangesNothingButTheRank) {
  expect_in_child([](std::string& problems) {
    forget_the_launcher();
    dtrain::dist::init_process_group(
        {.backend = "gloo",
         .init_method = "tcp://127.0.0.1:" + std::to_string(dtrain::testing::free_port()),
         .rank = 0,
         .world_size = 1});
    if (dtrain::util::job_rank() != 0) {
      problems += "init_process_group did not record the job's rank\n";
    }
    expect_changed(problems, "in a one-rank Gloo group", {});
    dtrain::dist::destroy_process_group();
    expect_changed(problems, "after destroy_process_group", {});
  });
}

TEST(ProcessSetup, SetsUpEverySettingByDefault) {
  expect_in_child([](std::string& problems) {
    forget_the_launcher();
    dtrain::util::set_up_process();
    expect_changed(problems, "set_up_process()", all_of({kLogging, kCrashTraces, kHostMemory}));
    const Logged logged = log_a_line();
    if (spdlog::default_logger()->name() != "dtrain" || !logged.out.empty() ||
        logged.err.find("] [rank -/local -] [info] a line\n") == std::string::npos) {
      problems += "dtrain's logger does not write the line with its rank to stderr: out '" +
                  logged.out + "', err '" + logged.err + "'\n";
    }
  });
}

// A second call changes nothing that the first set up: the rank a process
// group put in the prefix stays, as does the logger. Calls on several
// threads at once set up each part once.
TEST(ProcessSetup, SetsUpEachPartOnce) {
  expect_in_child([](std::string& problems) {
    forget_the_launcher();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([] { dtrain::util::set_up_process(); });
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
    const spdlog::logger* first = spdlog::default_logger_raw();
    dtrain::util::set_log_rank(2, 1);
    dtrain::util::set_up_process();
    if (spdlog::default_logger_raw() != first) {
      problems += "a second set_up_process replaced the logger\n";
    }
    const std::string err = log_a_line().err;
    if (err.find("] [rank 2/local 1] [info] a line\n") == std::string::npos) {
      problems += "a second set_up_process dropped the group's rank: '" + err + "'\n";
    }
  });
}

// Each option alone changes its own settings only; without dtrain's
// logging, a process group's rank leaves spdlog's pattern as it was.
TEST(ProcessSetup, EachPartIsSetUpAlone) {
  const ProcessSetup none =
      ProcessSetup().logging(false).crash_traces(false).retain_freed_host_memory(false);
  const std::vector<std::pair<ProcessSetup, Settings>> cases = {
      {ProcessSetup(none).logging(true), kLogging},
      {ProcessSetup(none).crash_traces(true), kCrashTraces},
      {ProcessSetup(none).retain_freed_host_memory(true), kHostMemory},
      {none, {}}};
  for (const auto& [options, expected] : cases) {
    SCOPED_TRACE(text_of(expected));
    expect_in_child([&](std::string& problems) {
      forget_the_launcher();
      dtrain::util::set_up_process(options);
      dtrain::util::set_log_rank(1, 0);
      expect_changed(problems, "set_up_process(" + text_of(expected) + ") and a rank", expected);
    });
  }
}

}  // namespace
