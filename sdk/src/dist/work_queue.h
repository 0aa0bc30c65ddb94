// The ordered worker of a backend: operations run one at a time, on one
// thread, in the order they were issued (every rank must issue collectives
// in the same order), each finishing the Work it was enqueued with.
//
// Note [Worker errors]: an exception from a task finishes its Work with a
// CollectiveError (a CollectiveTimeoutError when the message says it timed
// out), prefixed with the Work's description; a CollectiveError the task
// threw itself passes through unchanged.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dtrain/dist/work.h"

namespace dtrain::dist::detail {

// True when a backend's error message says the operation timed out.
bool looks_like_timeout(const std::string& message);

class WorkQueue {
 public:
  WorkQueue() = default;
  ~WorkQueue() { stop(); }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Starts the worker thread; tasks enqueued before wait until then.
  void start();
  // Runs what is queued, then joins the worker. Idempotent.
  void stop();
  // Returns at once with the Work that `run` will finish.
  WorkPtr enqueue(std::string description, std::function<void()> run);

 private:
  struct Task {
    std::function<void()> run;
    WorkPtr work;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace dtrain::dist::detail
