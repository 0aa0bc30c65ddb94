// A thread that watches one blocking call at a time and acts when it runs
// past its deadline: how the MPI transport keeps its timeouts on a call it
// cannot poll (Note [A blocking all-reduce, watched], process_group_mpi.cpp).
//
// Arming and disarming cost a lock each and never wake the thread: it
// looks every `look_every`, so an overdue call is seen up to that late.
// When it sees one, it asks `diagnose` for the failure's message (which may
// take the diagnosis's grace), then hands it to `overdue` if the same call
// is still running; a call that ended meanwhile only logs it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "transport.h"

namespace dtrain::dist::detail {

class CallWatch {
 public:
  // Both run on the watch's thread. `overdue` normally ends the process.
  using Diagnose = std::function<std::string(const OpContext&)>;
  using Overdue = std::function<void(const std::string& message)>;

  CallWatch(std::chrono::milliseconds look_every, Diagnose diagnose, Overdue overdue);
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // While alive, the call of `ctx` is watched against ctx.timeout from now.
  // `ctx` must outlive it. One at a time per watch.
  class Watched {
   public:
    Watched(CallWatch& watch, const OpContext& ctx);
    ~Watched();
    Watched(const Watched&) = delete;
    Watched& operator=(const Watched&) = delete;

   private:
    CallWatch& watch_;
  };

 private:
  void loop();

  const std::chrono::milliseconds look_every_;
  const Diagnose diagnose_;
  const Overdue overdue_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  const OpContext* call_ = nullptr;  // the call watched now, if any
  std::chrono::steady_clock::time_point deadline_;
  std::uint64_t calls_ = 0;  // how many were watched: which call `call_` is
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dtrain::dist::detail
