#include "call_watch.h"

#include <spdlog/spdlog.h>

namespace dtrain::dist::detail {

CallWatch::CallWatch(std::chrono::milliseconds look_every, Diagnose diagnose, Overdue overdue)
    : look_every_(look_every), diagnose_(std::move(diagnose)), overdue_(std::move(overdue)) {
  thread_ = std::thread([this] { loop(); });
}

CallWatch::~CallWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

CallWatch::Watched::Watched(CallWatch& watch, const OpContext& ctx) : watch_(watch) {
  const auto deadline = std::chrono::steady_clock::now() + ctx.timeout;
  std::lock_guard<std::mutex> lock(watch_.mutex_);
  watch_.call_ = &ctx;
  watch_.deadline_ = deadline;
  ++watch_.calls_;
}

CallWatch::Watched::~Watched() {
  std::lock_guard<std::mutex> lock(watch_.mutex_);
  watch_.call_ = nullptr;
}

void CallWatch::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, look_every_, [this] { return stopping_; });
    if (stopping_ || call_ == nullptr || std::chrono::steady_clock::now() <= deadline_) {
      continue;
    }
    // The call cannot end while we copy it: ending it takes the lock.
    const OpContext overdue_call = *call_;
    const std::uint64_t which = calls_;
    lock.unlock();
    const std::string message = diagnose_(overdue_call);
    lock.lock();
    if (call_ != nullptr && calls_ == which) {
      lock.unlock();
      overdue_(message);
      lock.lock();
    } else {
      spdlog::warn("{}; it finished while its peers were asked", message);
    }
    // One failure a call: look again only at a later one.
    while (!stopping_ && calls_ == which) {
      stop_cv_.wait_for(lock, look_every_, [this] { return stopping_; });
    }
  }
}

}  // namespace dtrain::dist::detail
