// Stack traces of crashes. When a process that installed them dies of a
// fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), it first writes
// the signal and its native stack to stderr, with its rank:
//
//   [rank 1/local 1] fatal signal 11 (SIGSEGV); native stack:
//   .../libgloo.so.0(_ZN4gloo...+0x2a)[0x7f...]
//   ...
//
// and then dies of that signal as before (its exit status is unchanged), so
// dtrun's failure summary, which quotes a failed worker's last lines, shows
// where it crashed. Installed by util::set_up_process (process_setup.h),
// never when the SDK is loaded (Note [Nothing happens on load]), and only
// for signals whose handler is still the default: a program's own handlers
// (Python's, say) stay. DTRAIN_CRASH_TRACE=0 turns it off. Frames of executables show as
// offsets unless they are linked with -rdynamic; addr2line -e <binary>
// <offset> names them.
//
// An exception that nothing catches (one thrown on a thread of a library
// the SDK calls, say) is named the same way before the process aborts:
//
//   [rank 1/local 1] terminate: uncaught gloo::EnforceNotMet: [enforce fail
//   at .../pair.cc:...] op.preamble.length <= op.nbytes. 20 vs 16
//   [rank 1/local 1] a Gloo message of 20 bytes arrived where this rank
//   had room for 16: ...
//
// the second line from an explainer that the part of the SDK which knows
// the library registered (add_uncaught_explainer). Installed with the
// signal handlers, only while the terminate handler is still the C++
// runtime's own.
#pragma once

#include <optional>
#include <string>

namespace dtrain::util {

// Installs the handler for each fatal signal still at its default action,
// unless DTRAIN_CRASH_TRACE=0. Safe to call again (it then changes nothing
// for signals it already handles).
void install_crash_trace();

// The rank and local rank the trace names (set_log_rank calls this).
void set_crash_trace_rank(std::optional<int> rank, std::optional<int> local_rank);

// Says in words what an uncaught exception whose what() is `what` means for
// the user, or returns "" when it does not recognise it.
using UncaughtExplainer = std::string (*)(const std::string& what);

// Adds an explainer that the terminate handler asks, in the order added,
// after naming an uncaught exception; adding one twice changes nothing. At
// most 8 are kept (more are ignored): a few parts of the SDK each register
// one for the library they wrap.
void add_uncaught_explainer(UncaughtExplainer explainer);

}  // namespace dtrain::util
