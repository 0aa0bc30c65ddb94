// A backend's ordered worker (sdk/src/dist/work_queue.h): tasks run one at
// a time in issue order, and, in a queue made with Waiters::kRun, a thread
// that waits on a Work whose task is next runs it itself (Note [The waiter
// runs its task]); a task nobody waits on still runs on the worker.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/work_queue.h"
#include "dtrain/dist/types.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dist::detail::WorkQueue;
using Waiters = WorkQueue::Waiters;

// What the tasks saw: the order they ran in and the thread each ran on.
struct Runs {
  std::mutex mutex;
  std::vector<std::string> order;
  std::vector<std::thread::id> threads;
  void add(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(name);
    threads.push_back(std::this_thread::get_id());
  }
};

// A task that blocks until released, so that later ones queue behind it.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
  void pass() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [this] { return open; });
  }
};

// Polls `work` without waiting on it (waiting would run it here); generous,
// as the worker may be slow to get a core on a loaded machine.
bool completes(const dist::WorkPtr& work) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!work->is_completed()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(WorkQueue, AWaiterRunsTheTaskThatIsNextOnItsOwnThread) {
  WorkQueue queue(Waiters::kRun);
  queue.start();
  Runs runs;
  for (int i = 0; i < 20; ++i) {
    auto work = queue.enqueue("op " + std::to_string(i),
                              [&runs, i] { runs.add("op " + std::to_string(i)); });
    work->wait();
  }
  // The worker may win the race for a task now and then; the waiter for most.
  int here = 0;
  for (const auto& id : runs.threads) {
    here += id == std::this_thread::get_id() ? 1 : 0;
  }
  EXPECT_EQ(runs.order.size(), 20u);
  EXPECT_GT(here, 0) << "no task ran on the thread that waited for it";
  queue.stop();
}

TEST(WorkQueue, AWaiterNeverRunsATaskOutOfTurn) {
  WorkQueue queue(Waiters::kRun);
  queue.start();
  Runs runs;
  Gate gate;
  auto first = queue.enqueue("first", [&] {
    gate.pass();
    runs.add("first");
  });
  auto second = queue.enqueue("second", [&] { runs.add("second"); });
  auto third = queue.enqueue("third", [&] { runs.add("third"); });
  std::thread opener([&] {
    std::this_thread::sleep_for(50ms);
    gate.release();
  });
  third->wait();  // cannot run "third" before the other two
  opener.join();
  second->wait();
  first->wait();
  EXPECT_EQ(runs.order, (std::vector<std::string>{"first", "second", "third"}));
  queue.stop();
}

// Tasks issued before the one waited on are due first: the waiter runs
// them too, in order, rather than sleeping until the worker gets to them.
TEST(WorkQueue, AWaiterRunsTheTasksAheadOfItsOwnInOrder) {
  WorkQueue queue(Waiters::kRun);
  queue.start();
  Runs runs;
  std::vector<dist::WorkPtr> works;
  std::vector<std::string> issued;
  for (int i = 0; i < 20; ++i) {
    issued.push_back(std::to_string(i));
    works.push_back(queue.enqueue(issued.back(), [&runs, i] { runs.add(std::to_string(i)); }));
  }
  works.back()->wait();
  for (const auto& work : works) {
    EXPECT_TRUE(work->is_completed()) << work->description();
  }
  EXPECT_EQ(runs.order, issued);
  queue.stop();
}

TEST(WorkQueue, ATaskNobodyWaitsOnRunsOnTheWorker) {
  WorkQueue queue(Waiters::kRun);
  queue.start();
  Runs runs;
  auto work = queue.enqueue("background", [&] { runs.add("background"); });
  ASSERT_TRUE(completes(work)) << "the worker never picked up a task nobody woke it for";
  ASSERT_EQ(runs.threads.size(), 1u);
  EXPECT_NE(runs.threads[0], std::this_thread::get_id());
  queue.stop();
}

// A timeout given to wait() must hold however long the task runs, so that
// wait leaves the task to the worker.
TEST(WorkQueue, AWaitWithItsOwnTimeoutLeavesTheTaskToTheWorker) {
  for (const Waiters waiters : {Waiters::kRun, Waiters::kWait}) {
    WorkQueue queue(waiters);
    queue.start();
    Runs runs;
    auto work = queue.enqueue("op", [&] { runs.add("op"); });
    work->wait(30s);
    ASSERT_EQ(runs.threads.size(), 1u);
    EXPECT_NE(runs.threads[0], std::this_thread::get_id());
    queue.stop();
  }
}

// Note [Worker errors], whichever thread ran the task.
TEST(WorkQueue, AFailedTaskFailsItsWorkOnTheWaiterAsOnTheWorker) {
  for (const Waiters waiters : {Waiters::kRun, Waiters::kWait}) {
    WorkQueue queue(waiters);
    queue.start();
    auto failing = queue.enqueue("all_reduce(SUM) on group 'g'", [] {
      throw std::runtime_error("Timed out waiting 5ms for recv");
    });
    try {
      failing->wait();
      ADD_FAILURE() << "the failed task's wait returned";
    } catch (const dist::CollectiveTimeoutError& e) {
      EXPECT_EQ(std::string(e.what()),
                "all_reduce(SUM) on group 'g': Timed out waiting 5ms for recv");
    }
    queue.stop();
  }
}

// Note [A caller that waits at once]. Outside a WaitsAtOnce, an enqueue
// wakes the worker once it sleeps (a look at the queue found nothing, a
// millisecond after its last task); inside one, no enqueue does, however
// long the worker has slept, and the waiter runs every task.
TEST(WorkQueue, ACallerThatWaitsAtOnceLeavesTheWorkerAsleep) {
  WorkQueue queue(Waiters::kRun);
  queue.start();
  Runs runs;
  const auto issue_and_wait = [&](int i) {
    queue.enqueue(std::to_string(i), [&runs, i] { runs.add(std::to_string(i)); })->wait();
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (int i = 0; queue.wake_ups() == 0; ++i) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no enqueue ever woke the worker";
    std::this_thread::sleep_for(5ms);
    issue_and_wait(i);
  }
  const int woken = queue.wake_ups();
  const std::size_t before = runs.threads.size();
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(5ms);
    const dist::detail::WaitsAtOnce waits;
    issue_and_wait(i);
  }
  EXPECT_EQ(queue.wake_ups(), woken);
  for (std::size_t i = before; i < runs.threads.size(); ++i) {
    EXPECT_EQ(runs.threads[i], std::this_thread::get_id()) << "task " << runs.order[i];
  }
  queue.stop();
}

// A task a WaitsAtOnce left queued (its wait never came) is not stranded:
// the scope's end wakes the worker for it.
TEST(WorkQueue, ATaskAWaitsAtOnceLeftQueuedRunsOnTheWorker) {
  WorkQueue queue(Waiters::kRun);
  queue.start();
  Runs runs;
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(20ms);  // the worker sleeps by now, as a rule
    dist::WorkPtr work;
    {
      const dist::detail::WaitsAtOnce waits;
      work = queue.enqueue("left", [&] { runs.add("left"); });
    }
    ASSERT_TRUE(completes(work)) << "a task left queued in a WaitsAtOnce never ran";
  }
  for (const auto& id : runs.threads) {
    EXPECT_NE(id, std::this_thread::get_id());
  }
  queue.stop();
}

TEST(WorkQueue, StopRunsWhatIsQueuedFirst) {
  Runs runs;
  {
    WorkQueue queue(Waiters::kRun);
    for (int i = 0; i < 3; ++i) {
      queue.enqueue("op", [&runs, i] { runs.add(std::to_string(i)); });
    }
    queue.start();
    queue.stop();
  }
  EXPECT_EQ(runs.order, (std::vector<std::string>{"0", "1", "2"}));
}

}  // namespace
