#include "work_queue.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "dtrain/dist/types.h"

namespace dtrain::dist::detail {

namespace {

using Clock = std::chrono::steady_clock;

// Note [The waiter runs its task]: how long a task waits for a thread to
// wait on it before the worker, idle, runs it; an idle worker also looks at
// the queue this often, and sleeps until woken once a look found nothing.
constexpr std::chrono::milliseconds kPickUp{1};

// Note [A caller that waits at once]: how many WaitsAtOnce this thread is
// in, and the queues whose asleep worker it did not wake since the first.
thread_local int t_waits_at_once = 0;
thread_local std::vector<std::weak_ptr<WorkQueue::State>> t_not_woken;

}  // namespace

struct WorkQueue::State {
  struct Task {
    std::function<void()> run;
    WorkPtr work;
    Clock::time_point enqueued;
  };

  explicit State(Waiters waiters) : waiters(waiters) {}

  const Waiters waiters;
  std::mutex mutex;
  std::condition_variable cv;  // the worker's only
  std::deque<Task> queue;
  bool busy = false;  // a task runs, on the worker or a waiter
  bool stopping = false;
  bool asleep = false;           // the worker waits without a timer
  int helpers = 0;               // waiters waiting for a turn (run_through)
  std::atomic<int> waiting{0};   // threads in QueuedWork::wait
  std::atomic<int> wake_ups{0};  // enqueues that woke the asleep worker

  bool ready() const { return !busy && !queue.empty(); }
  bool done() const { return !busy && queue.empty() && stopping; }

  // Takes the next task; under `mutex`, when ready().
  Task take() {
    Task task = std::move(queue.front());
    queue.pop_front();
    busy = true;
    return task;
  }

  // Runs `task` outside `mutex` and finishes its Work (Note [Worker errors]).
  void execute(Task& task) { execute(task.run, *task.work); }
  void execute(c10::function_ref<void()> run, Work& work) {
    try {
      run();
      work.finish();
    } catch (const CollectiveError&) {
      work.finish(std::current_exception());
    } catch (const std::exception& e) {
      const std::string message = work.description() + ": " + e.what();
      work.finish(looks_like_timeout(message)
                      ? std::make_exception_ptr(CollectiveTimeoutError(message))
                      : std::make_exception_ptr(CollectiveError(message)));
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      busy = false;
      // The worker has a turn to take or an end; a waiter, a turn or its task gone.
      wake = !queue.empty() || stopping || helpers > 0;
    }
    if (wake) {
      cv.notify_all();
    }
  }

  // Until there is a task to run or the queue is done; under `lock`.
  void idle(std::unique_lock<std::mutex>& lock) {
    const auto awake = [this] { return ready() || done(); };
    if (waiters == Waiters::kRun && cv.wait_for(lock, kPickUp, awake)) {
      return;
    }
    asleep = true;
    cv.wait(lock, awake);
    asleep = false;
  }

  // Whether the worker, idle until now, leaves the next task to a waiter a
  // while longer; then it waits that long, under `lock`.
  bool left_to_waiter(std::unique_lock<std::mutex>& lock) {
    if (waiters != Waiters::kRun || stopping) {
      return false;
    }
    const Clock::time_point due = queue.front().enqueued + kPickUp;
    if (Clock::now() >= due) {
      return false;
    }
    cv.wait_until(lock, due);
    return true;
  }

  // The worker: a task nobody claimed, then the ones behind it without pause
  // (their waiters, if any, sleep until the turn comes).
  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    bool running = false;  // ran the task before this one
    while (!done()) {
      if (!ready()) {
        running = false;
        idle(lock);
        continue;
      }
      if (!running && left_to_waiter(lock)) {
        continue;
      }
      Task task = take();
      lock.unlock();
      execute(task);
      lock.lock();
      running = true;
    }
  }

  bool queued(const Work* work) const {
    return std::any_of(queue.begin(), queue.end(),
                       [work](const Task& task) { return task.work.get() == work; });
  }

  // A waiter's turn: runs, in order, the tasks up to and including `work`'s
  // while it is queued, waiting out a task that another thread runs.
  void run_through(const Work* work) {
    std::unique_lock<std::mutex> lock(mutex);
    while (queued(work)) {
      if (busy) {
        ++helpers;
        cv.wait(lock, [&] { return !busy || !queued(work); });
        --helpers;
        continue;
      }
      Task task = take();
      const bool ours = task.work.get() == work;
      lock.unlock();
      execute(task);
      if (ours) {
        return;
      }
      lock.lock();
    }
  }
};

namespace {

// Counts a thread in wait() for as long as it is there.
class Waiting {
 public:
  explicit Waiting(std::atomic<int>& count) : count_(count) { ++count_; }
  ~Waiting() { --count_; }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  std::atomic<int>& count_;
};

// A Work whose waiter may run its task (Note [The waiter runs its task]).
class QueuedWork : public Work {
 public:
  QueuedWork(std::string description, std::weak_ptr<WorkQueue::State> state)
      : Work(std::move(description)), state_(std::move(state)) {}

  // Only with the operation's own timeout: a shorter one given here must
  // hold even where the task would run longer.
  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) override {
    const auto state = state_.lock();
    if (state == nullptr) {
      Work::wait(timeout);
      return;
    }
    const Waiting waiting(state->waiting);
    if (timeout.count() == 0 && !Work::is_completed()) {
      state->run_through(this);
    }
    Work::wait(timeout);
  }

 private:
  std::weak_ptr<WorkQueue::State> state_;
};

}  // namespace

bool looks_like_timeout(const std::string& message) {
  return message.find("imed out") != std::string::npos ||
         message.find("did not complete") != std::string::npos;
}

WorkQueue::WorkQueue(Waiters waiters) : state_(std::make_shared<State>(waiters)) {}

void WorkQueue::start() {
  worker_ = std::thread([state = state_] { state->loop(); });
}

void WorkQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (worker_.joinable()) {
    worker_.join();
  }
}

bool WorkQueue::waited() const {
  return state_->waiting.load() > 0;
}

int WorkQueue::wake_ups() const {
  return state_->wake_ups.load();
}

WorkPtr WorkQueue::enqueue(std::string description, std::function<void()> run) {
  const bool waiter_runs = state_->waiters == Waiters::kRun;
  WorkPtr work = waiter_runs ? std::make_shared<QueuedWork>(std::move(description), state_)
                             : std::make_shared<Work>(std::move(description));
  bool asleep = false;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->queue.push_back({std::move(run), work, Clock::now()});
    asleep = state_->asleep;
  }
  // A worker on its short timer picks the task up by itself, unless the
  // waiter runs it first; waking it would cost the waiter a core's turn.
  const bool left_asleep = waiter_runs && asleep && t_waits_at_once > 0;
  if (left_asleep) {
    t_not_woken.push_back(state_);
  }
  if (!waiter_runs || (asleep && !left_asleep)) {
    state_->wake_ups += asleep ? 1 : 0;
    state_->cv.notify_all();
  }
  return work;
}

WorkPtr WorkQueue::run_if_idle(const std::string& description, c10::function_ref<void()> run) {
  if (state_->waiters != Waiters::kRun || t_waits_at_once == 0) {
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->busy || !state_->queue.empty() || state_->stopping) {
      return nullptr;
    }
    state_->busy = true;
  }
  auto work = std::make_shared<Work>(description);
  state_->execute(run, *work);
  return work;
}

WaitsAtOnce::WaitsAtOnce() {
  ++t_waits_at_once;
}

WaitsAtOnce::~WaitsAtOnce() {
  if (--t_waits_at_once > 0) {
    return;
  }
  for (const auto& weak : t_not_woken) {
    const auto state = weak.lock();
    if (state == nullptr) {
      continue;
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      wake = state->asleep && state->ready();
    }
    if (wake) {
      state->cv.notify_all();
    }
  }
  t_not_woken.clear();
}

}  // namespace dtrain::dist::detail
