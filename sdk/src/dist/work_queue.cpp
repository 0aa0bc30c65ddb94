#include "work_queue.h"

#include "dtrain/dist/types.h"

namespace dtrain::dist::detail {

namespace {

// Note [The waiter runs its task]: how late the worker, idle, picks up a task
// that nobody woke it for; after that long idle it sleeps until woken.
constexpr std::chrono::milliseconds kPickUp{1};

}  // namespace

struct WorkQueue::State {
  struct Task {
    std::function<void()> run;
    WorkPtr work;
  };

  explicit State(Waiters waiters) : waiters(waiters) {}

  const Waiters waiters;
  std::mutex mutex;
  std::condition_variable cv;  // the worker's only
  std::deque<Task> queue;
  bool busy = false;  // a task runs, on the worker or a waiter
  bool stopping = false;
  bool asleep = false;  // the worker waits without a timer

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
  void execute(Task& task) {
    try {
      task.run();
      task.work->finish();
    } catch (const CollectiveError&) {
      task.work->finish(std::current_exception());
    } catch (const std::exception& e) {
      const std::string message = task.work->description() + ": " + e.what();
      task.work->finish(looks_like_timeout(message)
                            ? std::make_exception_ptr(CollectiveTimeoutError(message))
                            : std::make_exception_ptr(CollectiveError(message)));
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      busy = false;
      wake = !queue.empty() || stopping;  // the worker has a turn to take, or an end
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

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!done()) {
      if (!ready()) {
        idle(lock);
        continue;
      }
      Task task = take();
      lock.unlock();
      execute(task);
      lock.lock();
    }
  }

  // Runs `work`'s task on this thread when it is next and nothing runs.
  void run_if_next(const Work* work) {
    Task task;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!ready() || queue.front().work.get() != work) {
        return;
      }
      task = take();
    }
    execute(task);
  }
};

namespace {

// A Work whose waiter may run its task (Note [The waiter runs its task]).
class QueuedWork : public Work {
 public:
  QueuedWork(std::string description, std::weak_ptr<WorkQueue::State> state)
      : Work(std::move(description)), state_(std::move(state)) {}

  // Only with the operation's own timeout: a shorter one given here must
  // hold even where the task would run longer.
  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) override {
    if (timeout.count() == 0 && !Work::is_completed()) {
      if (auto state = state_.lock()) {
        state->run_if_next(this);
      }
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

WorkPtr WorkQueue::enqueue(std::string description, std::function<void()> run) {
  const bool waiter_runs = state_->waiters == Waiters::kRun;
  WorkPtr work = waiter_runs ? std::make_shared<QueuedWork>(std::move(description), state_)
                             : std::make_shared<Work>(std::move(description));
  bool wake = true;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->queue.push_back({std::move(run), work});
    // A worker on its short timer picks the task up by itself, unless the
    // waiter runs it first; waking it would cost the waiter a core's turn.
    wake = !waiter_runs || state_->asleep;
  }
  if (wake) {
    state_->cv.notify_all();
  }
  return work;
}

}  // namespace dtrain::dist::detail
