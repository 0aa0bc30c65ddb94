#include "rank_records.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "dtrain/store/prefix_store.h"
#include "dtrain/store/tcp_store.h"
#include "flight_recorder.h"

namespace dtrain::dist::detail {

namespace {

using std::chrono::milliseconds;

// How long a store call of the records may take: dtrun's store answers at
// once unless its host is gone, and a record must not hold up an error.
constexpr milliseconds kStoreTimeout{3000};
// How often the publisher looks for a dump request when nothing changes.
constexpr milliseconds kPollInterval{100};
constexpr milliseconds kLeastInterval{10};

std::atomic<bool> dump_requested{false};

void on_dump_signal(int) {
  dump_requested.store(true);
}

struct Records {
  std::mutex mutex;
  bool started = false;
  int rank = 0;
  int world_size = 1;
  int signal = 0;  // installed dump signal, or 0
  std::optional<store::RecordsLocation> location;
  std::shared_ptr<store::Store> store;  // once connected
  std::string last_progress;
};

Records& records() {
  static Records* state = new Records();  // never destroyed: its thread outlives main
  return *state;
}

std::shared_ptr<store::Store> connected_store() {
  std::lock_guard<std::mutex> lock(records().mutex);
  return records().store;
}

std::string dump_path(int rank) {
  const char* dir = std::getenv("DTRAIN_FLIGHT_RECORDER_DIR");
  if (dir == nullptr || *dir == '\0') {
    dir = std::getenv("TMPDIR");
  }
  const std::string folder = dir != nullptr && *dir != '\0' ? dir : "/tmp";
  return folder + "/dtrain_flight_recorder_rank_" + std::to_string(rank) + ".json";
}

// Where the recorder says the rank is, as a progress record, or "" with none.
std::string progress_text(int rank, int signal) {
  const FlightRecorder& recorder = flight_recorder();
  const auto last = recorder.current();
  if (!last) {
    return "";
  }
  store::ProgressRecord record;
  record.rank = rank;
  record.group = last->group;
  record.seq = last->seq;
  record.op = last->op;
  record.state = std::string(last->state);
  record.recorded = recorder.recorded();
  record.dump_signal = signal;
  record.pid = ::getpid();
  return store::encode(record);
}

// Connects to dtrun's store, then publishes progress as it changes and
// dumps the recorder when asked, until the process ends.
void publish(store::RecordsLocation location, int rank, int signal) {
  try {
    auto tcp = std::make_shared<store::TcpStore>(
        store::TcpStoreOptions().host(location.host).port(location.port).timeout(kStoreTimeout));
    std::lock_guard<std::mutex> lock(records().mutex);
    records().store = std::make_shared<store::PrefixStore>(location.prefix, tcp);
  } catch (const std::exception& e) {
    spdlog::warn("flight recorder: cannot reach dtrun's store at {}:{} ({}); no progress records",
                 location.host, location.port, e.what());
  }
  std::int64_t version = -1;
  while (true) {
    // Woken by a change; else, each poll, a Work that ended on its own.
    version = flight_recorder().wait_for_change(version, kPollInterval);
    if (dump_requested.exchange(false)) {
      dump_flight_recorder("dtrun asked for it");
    }
    const auto store = connected_store();
    const std::string text = progress_text(rank, signal);
    if (store == nullptr || text.empty() || text == records().last_progress) {
      continue;
    }
    try {
      store->set(store::progress_record_key(rank), text);
      records().last_progress = text;
      // At most a hundred a second, however fast collectives come: the
      // store is every agent's and every rank's.
      std::this_thread::sleep_for(kLeastInterval);
    } catch (const std::exception& e) {
      spdlog::debug("flight recorder: progress record not written: {}", e.what());
    }
  }
}

}  // namespace

std::shared_ptr<store::Store> records_store() {
  return connected_store();
}

int dump_signal() {
  return SIGRTMIN + 8;
}

void start_rank_records(int rank, int world_size) {
  Records& state = records();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.started) {
    return;
  }
  state.started = true;
  state.rank = rank;
  state.world_size = world_size;
  state.location = store::records_location();
  if (!state.location) {
    return;  // not under dtrun: dumps go to the file only, on a timeout
  }
  struct sigaction current {};
  if (::sigaction(dump_signal(), nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction action {};
    action.sa_handler = on_dump_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (::sigaction(dump_signal(), &action, nullptr) == 0) {
      state.signal = dump_signal();
    }
  }
  try {
    std::thread(publish, *state.location, rank, state.signal).detach();
  } catch (const std::exception& e) {
    spdlog::warn("flight recorder: no progress records ({})", e.what());
  }
}

void report_collective_timeout(const store::FailureRecord& record) {
  if (const auto store = connected_store()) {
    try {
      store->set(store::failure_record_key(record.rank), store::encode(record));
    } catch (const std::exception& e) {
      spdlog::warn("failure record not written to dtrun's store: {}", e.what());
    }
  }
  dump_flight_recorder(record.op + " #" + std::to_string(record.seq) + " on group '" +
                       record.group + "' timed out");
}

std::string dump_flight_recorder(const std::string& why) {
  int rank = 0;
  int world_size = 1;
  {
    std::lock_guard<std::mutex> lock(records().mutex);
    rank = records().rank;
    world_size = records().world_size;
  }
  const std::string json = flight_recorder_json(flight_recorder().entries(), rank, world_size);
  if (const auto store = connected_store()) {
    try {
      store->set(store::flight_recorder_key(rank), json);
    } catch (const std::exception& e) {
      spdlog::warn("flight recorder: dump not written to dtrun's store: {}", e.what());
    }
  }
  const std::string path = dump_path(rank);
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << json;
    if (!out.flush()) {
      spdlog::warn("flight recorder: cannot write {} ({})", partial, why);
      return "";
    }
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) {
    spdlog::warn("flight recorder: cannot write {}: {} ({})", path, error.message(), why);
    return "";
  }
  spdlog::warn("flight recorder dumped to {} ({})", path, why);
  return path;
}

}  // namespace dtrain::dist::detail
