// The ordered worker of a backend: operations run one at a time, in the
// order they were issued (every rank must issue collectives in the same
// order), each finishing the Work it was enqueued with.
//
// Note [Worker errors]: an exception from a task finishes its Work with a
// CollectiveError (a CollectiveTimeoutError when the message says it timed
// out), prefixed with the Work's description; a CollectiveError the task
// threw itself passes through unchanged.
//
// Note [The waiter runs its task]
// A queue made with Waiters::kRun lets a thread that waits on a Work (with
// the operation's own timeout) run that Work's task itself, and the tasks
// queued ahead of it, when none is running: a caller that issues an
// operation and waits on it at once then costs no hand-over to the worker
// and back, two thread wake-ups that made a small MPI all-reduce of 2
// ranks on 2 cores markedly slower than MPI_Allreduce. Tasks still run
// one at a time and in issue order, on whichever thread gets to them
// first. The worker is not woken for each task: idle, it looks at the
// queue every millisecond (it sleeps until woken once a look found
// nothing) and leaves a task that long to a waiter before it runs it, then
// runs the ones behind it without pause; so an operation issued and not
// waited on (DDP's buckets during backward) starts on the worker within a
// millisecond or two.
//
// Note [A caller that waits at once]
// A worker asleep (its last look found nothing) is woken by the next
// enqueue. When that task's caller waits on it at once, the waiter runs it
// and the wake-up only costs: on 2 cores, where both ranks of a small MPI
// all-reduce spin, the worker preempts one of them, about a thousand times
// a second in a loop of all-reduces, which kept dtrain's all-reduce of 64
// KiB further behind MPI_Allreduce's (architecture.md). So a thread that
// issues and then waits says so with a WaitsAtOnce around both (through
// dist::issue_and_wait, work.h: dtrain::dist's blocking functions, and the
// SDK's own calls that need the result at once, such as sync batch norm's
// and the grad scaler's). Its enqueues leave an asleep worker asleep; when
// the scope ends, a task it left queued (its wait threw, say) wakes the
// worker after all.
//
// Note [A turn taken at the call]
// Such a thread, issuing when nothing is queued or running, runs its
// operation there and then (run_if_idle, through Transport::run_now),
// before the issue returns: the turn is its anyway, and taking it at the
// call spares the queue's hand-over (the task queued, found and taken again
// by its own waiter), a good part of what a small collective's front end
// costs (Note [A collective's cost], process_group.cpp). The Work it
// returns is finished; errors land in it as in any turn (Note [Worker
// errors]). The front end holds its transport's issuing lock meanwhile
// (Transport::numbered), so another thread's operation on the group waits
// for the turn to end before it is numbered and queued, as it would have
// been queued behind it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <c10/util/FunctionRef.h>

#include "dtrain/dist/work.h"

namespace dtrain::dist::detail {

// True when a backend's error message says the operation timed out.
bool looks_like_timeout(const std::string& message);

class WorkQueue {
 public:
  // Who runs a task: the worker thread only, or also a thread waiting on its
  // Work (Note [The waiter runs its task]).
  enum class Waiters { kWait, kRun };

  explicit WorkQueue(Waiters waiters = Waiters::kWait);
  ~WorkQueue() { stop(); }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Starts the worker thread; tasks enqueued before wait until then.
  void start();
  // Runs what is queued, then joins the worker. Idempotent.
  void stop();
  // Returns at once with the Work that `run` will finish.
  WorkPtr enqueue(std::string description, std::function<void()> run);
  // Runs `run` now and returns its finished Work when this thread may take
  // its turn at the call (Note [A turn taken at the call]); else nullptr.
  WorkPtr run_if_idle(const std::string& description, c10::function_ref<void()> run);
  // True on the worker thread: a task runs in the background, not for a waiter.
  bool on_worker() const { return std::this_thread::get_id() == worker_.get_id(); }
  // True while a thread waits on one of this queue's Works (Waiters::kRun):
  // the worker's task then has someone waiting, if not for it, behind it.
  bool waited() const;
  // How many times an enqueue woke the worker from its sleep.
  int wake_ups() const;

  struct State;

 private:
  std::shared_ptr<State> state_;  // shared with the Works a waiter may run
  std::thread worker_;
};

// While alive, Works this thread enqueues on a Waiters::kRun queue do not
// wake its worker (Note [A caller that waits at once]).
class WaitsAtOnce {
 public:
  WaitsAtOnce();
  ~WaitsAtOnce();
  WaitsAtOnce(const WaitsAtOnce&) = delete;
  WaitsAtOnce& operator=(const WaitsAtOnce&) = delete;
};

}  // namespace dtrain::dist::detail
