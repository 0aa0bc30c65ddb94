// Stack traces of crashes. When a process that loaded the SDK dies of a
// fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), it first writes
// the signal and its native stack to stderr, with its rank:
//
//   [rank 1/local 1] fatal signal 11 (SIGSEGV); native stack:
//   .../libgloo.so.0(_ZN4gloo...+0x2a)[0x7f...]
//   ...
//
// and then dies of that signal as before (its exit status is unchanged), so
// dtrun's failure summary, which quotes a failed worker's last lines, shows
// where it crashed. Installed when the SDK is loaded, only for signals whose
// handler is still the default: a program's own handlers (Python's, say)
// stay. DTRAIN_CRASH_TRACE=0 turns it off. Frames of executables show as
// offsets unless they are linked with -rdynamic; addr2line -e <binary>
// <offset> names them.
#pragma once

#include <optional>

namespace dtrain::util {

// Installs the handler for each fatal signal still at its default action,
// unless DTRAIN_CRASH_TRACE=0. Safe to call again (it then changes nothing
// for signals it already handles).
void install_crash_trace();

// The rank and local rank the trace names (set_log_rank calls this).
void set_crash_trace_rank(std::optional<int> rank, std::optional<int> local_rank);

}  // namespace dtrain::util
