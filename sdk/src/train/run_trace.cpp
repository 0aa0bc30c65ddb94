#include "run_trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::train::detail {

namespace {

constexpr int kTrainingThread = 0;
constexpr int kAllReduceThread = 1;

double steady_us(ddp::TimePoint t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

// One complete event ("ph":"X") of `rank`, from `start` to `end` (steady
// clock), `origin_us` its time 0; `args` is the inside of its args object.
std::string span(const std::string& name, int rank, int tid, double origin_us, ddp::TimePoint start,
                 ddp::TimePoint end, const std::string& args) {
  const double ts = steady_us(start) - origin_us;
  return fmt::format(
      "{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},"
      "\"args\":{{{}}}}},\n",
      name, rank, tid, ts, steady_us(end) - steady_us(start), args);
}

// The names Perfetto shows for each rank and its two threads.
std::string metadata(int world) {
  std::string json;
  auto name = [&](const char* what, int pid, int tid, const std::string& args) {
    json += fmt::format("{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{{}}}}},\n",
                        what, pid, tid, args);
  };
  for (int rank = 0; rank < world; ++rank) {
    name("process_name", rank, 0, fmt::format("\"name\":\"rank {}\"", rank));
    name("process_sort_index", rank, 0, fmt::format("\"sort_index\":{}", rank));
    name("thread_name", rank, kTrainingThread, "\"name\":\"training\"");
    name("thread_name", rank, kAllReduceThread, "\"name\":\"all-reduce\"");
  }
  return json;
}

// {"traceEvents":[...]} of `events` (each ending ",\n"), written to a
// temporary file and renamed: a reader never sees half a trace.
void write_trace(const std::string& path, const std::string& events) {
  std::string json = "{\"traceEvents\":[\n" + events;
  if (!events.empty()) {
    json.resize(json.size() - 2);  // the last ",\n"
  }
  json += "\n],\"displayTimeUnit\":\"ms\"}\n";
  const std::filesystem::path target(path);
  std::error_code error;
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), error);
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << json;
    out.flush();
    if (!out) {
      throw IOError(fmt::format("cannot write the trace '{}'", path));
    }
  }
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::remove(temporary.c_str());
    throw IOError(fmt::format("cannot write the trace '{}': {}", path, error.message()));
  }
}

}  // namespace

RunTrace::RunTrace(std::string path, int64_t steps, int rank)
    : path_(std::move(path)),
      steps_(steps),
      rank_(rank),
      created_us_(std::chrono::duration<double, std::micro>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()),
      created_steady_us_(steady_us(std::chrono::steady_clock::now())) {
  if (records() && rank_ == 0) {
    write_trace(path_, "");
  }
}

void RunTrace::add_step(const StepRecord& step) {
  if (records() && step.step <= steps_) {
    epoch_.push_back({.record = step, .buckets = {}, .backward_end = {}});
  }
}

void RunTrace::add_communication(const std::vector<ddp::StepEvents>& steps) {
  auto next = epoch_.begin();
  for (const ddp::StepEvents& events : steps) {
    // The recorded step whose backward holds this one's end.
    while (next != epoch_.end() && next->record.optimizer < events.backward_end) {
      ++next;
    }
    if (next == epoch_.end()) {
      return;
    }
    if (next->record.backward <= events.backward_end) {
      next->buckets = events.buckets;
      next->backward_end = events.backward_end;
    }
  }
}

std::string RunTrace::epoch_events() const {
  std::string json;
  for (const Step& step : epoch_) {
    const StepRecord& r = step.record;
    const std::string where = fmt::format("\"epoch\":{},\"step\":{}", r.epoch, r.step);
    auto add = [&](const std::string& name, ddp::TimePoint start, ddp::TimePoint end) {
      json += span(name, rank_, kTrainingThread, *origin_steady_us_, start, end, where);
    };
    add("step", r.data, r.end);
    add("data", r.data, r.forward);
    add("forward", r.forward, r.backward);
    add("backward", r.backward, r.optimizer);
    if (step.backward_end != ddp::TimePoint{}) {
      add("compute", r.backward, step.backward_end);
      add("all-reduce wait", step.backward_end, r.optimizer);
    }
    add("optimizer", r.optimizer, r.end);
    for (const ddp::BucketEvent& bucket : step.buckets) {
      json +=
          span(fmt::format("all-reduce bucket {}", bucket.bucket), rank_, kAllReduceThread,
               *origin_steady_us_, bucket.start, bucket.end,
               fmt::format("{},\"bucket\":{},\"bytes\":{}", where, bucket.bucket, bucket.bytes));
    }
  }
  return json;
}

void RunTrace::write(const Job& job) {
  if (!records()) {
    return;
  }
  if (!origin_steady_us_) {
    // Time 0 is the earliest rank's start, on every rank's own steady
    // clock: spans subtract a number of their own size and keep their
    // nanoseconds (microseconds since 1970 in a double keep a quarter).
    const std::vector<double> starts =
        job.distributed() ? job.each(created_us_) : std::vector<double>{created_us_};
    const double first = *std::min_element(starts.begin(), starts.end());
    origin_steady_us_ = created_steady_us_ - (created_us_ - first);
  }
  const std::string mine = epoch_events();
  epoch_.clear();
  std::vector<std::string> every =
      job.distributed() ? dist::all_gather_strings(mine) : std::vector<std::string>{mine};
  if (rank_ != 0) {
    return;
  }
  for (std::string& events : every) {
    written_.push_back(std::move(events));
  }
  std::string events = metadata(job.world);
  for (const std::string& part : written_) {
    events += part;
  }
  write_trace(path_, events);
}

}  // namespace dtrain::train::detail
