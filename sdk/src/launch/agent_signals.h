// How the agent learns of SIGINT, SIGTERM and SIGHUP: a handler records the
// first signal and counts them, and writes a byte to a self-pipe so that a
// poll() in the monitor loop wakes at once. Process-wide state.
#pragma once

namespace dtrain::launch::signals {

// Installs the handlers (once) and ignores SIGPIPE, so a console that went
// away cannot kill the agent and orphan its workers.
void install();
// The first signal received, or 0.
int first();
// How many signals arrived so far.
int count();
// The self-pipe's read end, readable after a signal.
int wake_fd();
// Empties the self-pipe, so that polls wait again instead of spinning on it.
void drain();

}  // namespace dtrain::launch::signals
