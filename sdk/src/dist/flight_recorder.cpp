// Note [Flight recorder] (flight_recorder.h).
#include "flight_recorder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

namespace dtrain::dist::detail {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kDefaultEntries = 2000;

// A JSON string: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ranks_list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return out + "]";
}

std::string sizes_json(const std::vector<std::vector<std::int64_t>>& sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out += i ? ", [" : "[";
    for (std::size_t d = 0; d < sizes[i].size(); ++d) {
      out += (d ? ", " : "") + std::to_string(sizes[i][d]);
    }
    out += "]";
  }
  return out + "]";
}

std::string strings_json(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += (i ? ", " : "") + quoted(items[i]);
  }
  return out + "]";
}

std::string ns_or_null(std::int64_t ns) {
  return ns == 0 ? "null" : std::to_string(ns);
}

// The profiling name PyTorch writes, "<backend>:<op>": "gloo:all_reduce".
std::string profiling_name(const RecordedCollective& entry) {
  const std::string op = entry.op.substr(0, entry.op.find_first_of(" ("));
  return entry.backend + ":" + op;
}

}  // namespace

std::int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

FlightRecorder::FlightRecorder(std::size_t capacity) : capacity_(capacity) {}

std::int64_t FlightRecorder::record(const RecordedCollective& entry) {
  return record([&](RecordedCollective& slot) { slot = entry; });
}

std::int64_t FlightRecorder::record(c10::function_ref<void(RecordedCollective&)> fill) {
  if (capacity_ == 0) {
    return 0;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  RecordedCollective* slot = nullptr;
  if (slots_.size() < capacity_) {
    slot = &slots_.emplace_back();
  } else {
    // Assigned field by field, so its strings and vectors keep their storage.
    slot = &slots_[oldest_];
    oldest_ = (oldest_ + 1) % capacity_;
  }
  fill(*slot);
  slot->work.reset();
  slot->record_id = next_id_++;
  slot->time_created_ns = wall_clock_ns();
  slot->time_started_ns = 0;
  slot->time_completed_ns = 0;
  slot->state = "scheduled";
  changed_locked();
  return slot->record_id;
}

RecordedCollective* FlightRecorder::find_locked(std::int64_t id) {
  const auto kept = static_cast<std::int64_t>(slots_.size());
  const std::int64_t oldest_id = next_id_ - kept;
  if (id < oldest_id || id >= next_id_) {
    return nullptr;  // dropped already, or never kept
  }
  return &slots_[(oldest_ + static_cast<std::size_t>(id - oldest_id)) % slots_.size()];
}

std::vector<RecordedCollective> FlightRecorder::copy_locked(std::size_t skip) const {
  std::vector<RecordedCollective> out;
  for (std::size_t i = skip; i < slots_.size(); ++i) {
    out.push_back(slots_[(oldest_ + i) % slots_.size()]);
  }
  return out;
}

void FlightRecorder::changed_locked() {
  ++version_;
  changed_.notify_all();
}

void FlightRecorder::attach(std::int64_t id, const WorkPtr& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (RecordedCollective* entry = find_locked(id)) {
    entry->work = work;
  }
}

void FlightRecorder::started(std::int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (RecordedCollective* entry = find_locked(id)) {
    entry->state = "started";
    entry->time_started_ns = wall_clock_ns();
    changed_locked();
  }
}

void FlightRecorder::finished(std::int64_t id, bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (RecordedCollective* entry = find_locked(id)) {
    entry->state = ok ? "completed" : "failed";
    entry->time_completed_ns = wall_clock_ns();
    changed_locked();
  }
}

namespace {

// The entry's state where its Work says more: a backend whose turn ran
// before the device finished (NCCL), or a barrier the transport issues.
void refresh(RecordedCollective& entry, Clock::time_point steady_now, std::int64_t wall_now) {
  const WorkPtr work = entry.work.lock();
  if (!work) {
    return;
  }
  const auto finish = work->finish_time();
  if (!finish) {
    if (entry.state == "completed") {
      entry.state = "started";  // its turn ran; the device has not finished it
      entry.time_completed_ns = 0;
    }
  } else if (entry.state != "failed") {
    entry.state = work->exception() ? "failed" : "completed";
    entry.time_completed_ns =
        wall_now -
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady_now - *finish).count();
  }
}

}  // namespace

std::vector<RecordedCollective> FlightRecorder::entries() const {
  std::vector<RecordedCollective> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out = copy_locked(0);
  }
  // Outside the lock: a Work takes its own.
  const auto steady_now = Clock::now();
  const std::int64_t wall_now = wall_clock_ns();
  for (RecordedCollective& entry : out) {
    refresh(entry, steady_now, wall_now);
  }
  return out;
}

std::optional<RecordedCollective> FlightRecorder::last() const {
  std::optional<RecordedCollective> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slots_.empty()) {
      return std::nullopt;
    }
    entry = slots_[(oldest_ + slots_.size() - 1) % slots_.size()];
  }
  refresh(*entry, Clock::now(), wall_clock_ns());
  return entry;
}

std::optional<RecordedCollective> FlightRecorder::current() const {
  // Collectives finish in issue order on a group, so the unfinished ones
  // are among the last few; a window keeps the poll cheap.
  constexpr std::size_t kWindow = 64;
  std::vector<RecordedCollective> recent;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    recent = copy_locked(slots_.size() > kWindow ? slots_.size() - kWindow : 0);
  }
  if (recent.empty()) {
    return std::nullopt;
  }
  const auto steady_now = Clock::now();
  const std::int64_t wall_now = wall_clock_ns();
  for (RecordedCollective& entry : recent) {
    refresh(entry, steady_now, wall_now);
    if (entry.state != "completed") {
      return entry;
    }
  }
  return recent.back();
}

std::int64_t FlightRecorder::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_ - 1;
}

std::int64_t FlightRecorder::wait_for_change(std::int64_t version,
                                             std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return version_ != version; });
  return version_;
}

FlightRecorder& flight_recorder() {
  static FlightRecorder* recorder = [] {
    std::size_t capacity = kDefaultEntries;
    if (const char* text = std::getenv("DTRAIN_FLIGHT_RECORDER_ENTRIES"); text && *text) {
      capacity = static_cast<std::size_t>(std::max(0L, std::strtol(text, nullptr, 10)));
    }
    return new FlightRecorder(capacity);  // never destroyed: threads may record at exit
  }();
  return *recorder;
}

std::string flight_recorder_json(const std::vector<RecordedCollective>& entries, int rank,
                                 int world_size) {
  // Groups numbered in order of first appearance, as pg_id.
  std::map<std::string, int> pg_ids;
  std::ostringstream config;
  for (const RecordedCollective& entry : entries) {
    if (pg_ids.emplace(entry.group, static_cast<int>(pg_ids.size())).second) {
      config << (pg_ids.size() > 1 ? ", " : "") << quoted(entry.group)
             << ": {\"name\": " << quoted(entry.group) << ", \"desc\": " << quoted(entry.backend)
             << ", \"ranks\": " << quoted(ranks_list(entry.group_ranks)) << "}";
    }
  }
  std::ostringstream out;
  out << "{\"version\": \"2.4\", \"rank\": " << rank << ", \"world_size\": " << world_size
      << ",\n \"pg_config\": {" << config.str() << "},\n \"entries\": [";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const RecordedCollective& e = entries[i];
    const std::int64_t duration_ns =
        e.time_completed_ns && e.time_started_ns ? e.time_completed_ns - e.time_started_ns : 0;
    out << (i ? ",\n  " : "\n  ") << "{\"record_id\": " << e.record_id
        << ", \"pg_id\": " << pg_ids[e.group] << ", \"process_group\": [" << quoted(e.group) << ", "
        << quoted(e.backend) << "], \"collective_seq_id\": " << e.seq
        << ", \"p2p_seq_id\": 0, \"op_id\": " << e.seq
        << ", \"profiling_name\": " << quoted(profiling_name(e)) << ", \"op\": " << quoted(e.op)
        << ", \"time_created_ns\": " << e.time_created_ns
        << ", \"duration_ms\": " << (duration_ns ? std::to_string(duration_ns / 1e6) : "null")
        << ", \"input_sizes\": " << sizes_json(e.input_sizes)
        << ", \"input_dtypes\": " << strings_json(e.input_dtypes)
        << ", \"output_sizes\": " << sizes_json(e.input_sizes)
        << ", \"output_dtypes\": " << strings_json(e.input_dtypes)
        << ", \"state\": " << quoted(std::string(e.state))
        << ", \"time_discovered_started_ns\": " << ns_or_null(e.time_started_ns)
        << ", \"time_discovered_completed_ns\": " << ns_or_null(e.time_completed_ns)
        << ", \"retired\": " << (e.state == "completed" || e.state == "failed" ? "true" : "false")
        << ", \"timeout_ms\": " << e.timeout_ms << ", \"is_p2p\": false, \"frames\": []}";
  }
  out << "\n ]}\n";
  return out.str();
}

}  // namespace dtrain::dist::detail
