// The dtrun agent: one per node. It meets the other agents (rendezvous.h),
// starts this node's workers with their environment (worker_env.h),
// watches them, and on any failure stops and restarts the whole group, up
// to --max-restarts for the job.
//
//   LaunchOptions options = ...;           // see launch_options.h
//   return dtrain::launch::run_agent(options);
//
// Supervision, each monitor interval: pass worker output on; reap ended
// workers (the first non-zero exit is recorded for the job's summary and
// ends the round); send this node's heartbeat and check the others' (an
// agent silent for the heartbeat timeout is taken as gone); with --nnodes
// MIN:MAX, re-form the group when agents wait to join. SIGINT, SIGTERM and
// SIGHUP are passed on to every worker's process group; after the stop
// timeout the rest get SIGKILL (see Note [No orphans] in worker_process.h).
//
// The agent on the rendezvous endpoint hosts the store (static backend:
// node rank 0), and stays until every other agent has read the job's end.
#pragma once

#include "dtrain/launch/launch_options.h"

namespace dtrain::launch {

// Runs the job on this node. It takes the process over: it installs
// signal handlers, becomes a child subreaper, and SIGKILLs every child
// process left when a round's workers are stopped -- so call it from a
// process of its own, as dtrun does. Returns the process exit status: 0 when every
// worker of the final round exited 0, 1 when the job failed (after the
// summary was printed to stderr), 128 + N after signal N.
int run_agent(const LaunchOptions& options);

}  // namespace dtrain::launch
