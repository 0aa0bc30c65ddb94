#include "work_queue.h"

#include "dtrain/dist/types.h"

namespace dtrain::dist::detail {

bool looks_like_timeout(const std::string& message) {
  return message.find("imed out") != std::string::npos ||
         message.find("did not complete") != std::string::npos;
}

void WorkQueue::start() {
  worker_ = std::thread([this] { loop(); });
}

void WorkQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (worker_.joinable()) {
    worker_.join();
  }
}

WorkPtr WorkQueue::enqueue(std::string description, std::function<void()> run) {
  auto work = std::make_shared<Work>(std::move(description));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(run), work});
  }
  cv_.notify_one();
  return work;
}

void WorkQueue::loop() {
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
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
  }
}

}  // namespace dtrain::dist::detail
