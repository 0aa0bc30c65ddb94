// The process-wide settings of a dtrain training program, made in one call
// at the start of main():
//
//   int main(int argc, char** argv) {
//     dtrain::util::set_up_process();
//     ...
//   }
//
// It sets up, each unless its option is false:
//   - logging: spdlog's default logger on stderr with the rank and local
//     rank in every line, the level from DTRAIN_LOG_LEVEL (logging.h);
//     init_process_group then puts the group's rank in the prefix;
//   - crash traces: a fatal signal or an uncaught exception writes the
//     rank and the native stack to stderr before the process dies
//     (crash_trace.h; DTRAIN_CRASH_TRACE=0 turns them off);
//   - freed host memory kept in the process, glibc's malloc set as Note
//     [Freed host memory stays with the process] says (memory.h;
//     DTRAIN_HOST_MEMORY=release keeps glibc's defaults).
// dtrain's programs (the training apps, the examples, the benchmarks) call
// it; a program that wants only some of it says which:
//
//   dtrain::util::set_up_process(dtrain::util::ProcessSetup().crash_traces(false));
//
// Note [Nothing happens on load]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Linking or loading dtrain's libraries changes nothing process-wide: no
// logger, no signal or terminate handler, no malloc setting. Each of these
// belongs to the program, which may have its own (a Python interpreter
// that loads dtrain next to its own signal handlers, a service with its own
// logger, a test harness), and a library that replaces them when it is
// loaded does so before the program's first line can say otherwise.
// init_process_group does not set them either: it records the job's rank
// (job_rank.h), and puts it in the log prefix only where the program chose
// dtrain's logging. So a program opts in, once, with set_up_process.
#pragma once

#include <torch/arg.h>

namespace dtrain::util {

struct ProcessSetup {
  // dtrain's logging (logging.h): init_logging().
  TORCH_ARG(bool, logging) = true;
  // Crash traces of fatal signals and uncaught exceptions (crash_trace.h):
  // install_crash_trace(), naming the launcher's rank until a process
  // group names its own.
  TORCH_ARG(bool, crash_traces) = true;
  // glibc's malloc keeps freed memory in the process:
  // retain_freed_host_memory() (memory.h).
  TORCH_ARG(bool, retain_freed_host_memory) = true;
};

// Sets up each part that `options` asks for and no earlier call set up;
// parts set up before stay as they are (a second init_logging, say, would
// drop the rank a process group put in the prefix). Thread-safe.
void set_up_process(const ProcessSetup& options = {});

}  // namespace dtrain::util
