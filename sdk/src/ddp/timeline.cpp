#include "dtrain/ddp/timeline.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::ddp {
namespace {

double overlap_seconds(TimePoint a_start, TimePoint a_end, TimePoint b_start, TimePoint b_end) {
  const TimePoint start = std::max(a_start, b_start);
  const TimePoint end = std::min(a_end, b_end);
  return end > start ? std::chrono::duration<double>(end - start).count() : 0.0;
}

double seconds(TimePoint start, TimePoint end) {
  return std::chrono::duration<double>(end - start).count();
}

}  // namespace

void Timeline::add_step(StepEvents step) {
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.push_back(std::move(step));
}

std::vector<StepEvents> Timeline::steps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return steps_;
}

void Timeline::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.clear();
}

double Timeline::hidden_fraction() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double communication = 0;
  double hidden = 0;
  for (const StepEvents& step : steps_) {
    for (const BucketEvent& bucket : step.buckets) {
      communication += seconds(bucket.start, bucket.end);
      hidden += overlap_seconds(bucket.start, bucket.end, step.backward_start, step.backward_end);
    }
  }
  return communication > 0 ? hidden / communication : 0.0;
}

double Timeline::communication_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double communication = 0;
  for (const StepEvents& step : steps_) {
    for (const BucketEvent& bucket : step.buckets) {
      communication += seconds(bucket.start, bucket.end);
    }
  }
  return communication;
}

std::string Timeline::summary() const {
  const double hidden = hidden_fraction();
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t buckets = 0;
  for (const StepEvents& step : steps_) {
    buckets += step.buckets.size();
  }
  const double per_step = steps_.empty() ? 0.0 : static_cast<double>(buckets) / steps_.size();
  return fmt::format(
      "communication hidden behind backward: {:.1f}% ({} steps, {:.1f} buckets/step)",
      100.0 * hidden, steps_.size(), per_step);
}

void Timeline::write_chrome_trace(const std::string& path) const {
  const auto all = steps();
  const TimePoint origin = all.empty() ? TimePoint{} : all.front().backward_start;
  auto micros = [&](TimePoint t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };
  std::string json = "{\"traceEvents\":[\n";
  bool first = true;
  auto event = [&](const std::string& name, int tid, TimePoint start, TimePoint end,
                   const std::string& args) {
    json += fmt::format(
        "{}{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},"
        "\"args\":{{{}}}}}",
        first ? "" : ",\n", name, rank_, tid, micros(start), micros(end) - micros(start), args);
    first = false;
  };
  for (const StepEvents& step : all) {
    event(fmt::format("backward step {}", step.step), 0, step.backward_start, step.backward_end,
          fmt::format("\"step\":{}", step.step));
    for (const BucketEvent& bucket : step.buckets) {
      event(fmt::format("bucket {}", bucket.bucket), 1, bucket.start, bucket.end,
            fmt::format("\"step\":{},\"bytes\":{}", step.step, bucket.bytes));
    }
  }
  json += "\n]}\n";
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw IOError(fmt::format("cannot write timeline '{}'", path));
    }
    out << json;
    out.flush();
    if (!out) {
      throw IOError(fmt::format("cannot write timeline '{}'", path));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::remove(temporary.c_str());
    throw IOError(fmt::format("cannot write timeline '{}': {}", path, error.message()));
  }
}

}  // namespace dtrain::ddp
