#include "dtrain/launch/launch_options.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>

#include "dtrain/store/host_port.h"
#include "dtrain/util/errors.h"

namespace dtrain::launch {

namespace {

std::optional<long> parse_long(std::string_view text) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) {
      return parts;
    }
    start = end + 1;
  }
}

int parse_count(const std::string& text, const std::string& flag, const std::string& whole) {
  const auto value = parse_long(text);
  DTRAIN_CHECK(value && *value >= 1 && *value <= 1 << 20, flag, " '", whole,
               "': expected a positive whole number, got '", text, "'");
  return static_cast<int>(*value);
}

Streams parse_streams_value(const std::string& text, const std::string& flag,
                            const std::string& whole) {
  const auto value = parse_long(text);
  DTRAIN_CHECK(value && *value >= 0 && *value <= 3, flag, " '", whole,
               "': expected 0 (none), 1 (stdout), 2 (stderr) or 3 (both), got '", text, "'");
  return static_cast<Streams>(*value);
}

std::string seconds_text(std::chrono::milliseconds duration) {
  std::string text = std::to_string(duration.count() / 1000.0);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') {
    text.pop_back();
  }
  return text;
}

// Note [Duration range]
void check_duration(std::chrono::milliseconds duration, const std::string& name) {
  DTRAIN_CHECK(duration >= kMinDuration && duration <= kMaxDuration, name, " is ", duration.count(),
               " ms; expected 1 ms to one week (604800 s)");
}

}  // namespace

std::chrono::milliseconds parse_seconds(const std::string& text, const std::string& label) {
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(seconds);
  // Compared as seconds, before the conversion that 1e20 would overflow.
  const double min = kMinDuration.count() / 1000.0;
  const double max = kMaxDuration.count() / 1000.0;
  DTRAIN_CHECK(number && seconds >= min && seconds <= max, label,
               ": expected a number of seconds from 0.001 (1 ms) to 604800 (one week)");
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

void check_log_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  DTRAIN_CHECK(!ec, "--log-dir '", dir, "': cannot create the directory (", ec.message(),
               "); expected a directory dtrun may write in");
  DTRAIN_CHECK(std::filesystem::is_directory(dir, ec), "--log-dir '", dir,
               "' is not a directory; expected a directory dtrun may write in");
  DTRAIN_CHECK(::access(dir.c_str(), W_OK | X_OK) == 0, "--log-dir '", dir,
               "': cannot write in it (", std::strerror(errno),
               "); expected a directory dtrun may write in");
}

NodeRange parse_nnodes(const std::string& text) {
  const auto colon = text.find(':');
  NodeRange range;
  if (colon == std::string::npos) {
    range.min = range.max = parse_count(text, "--nnodes", text);
  } else {
    range.min = parse_count(text.substr(0, colon), "--nnodes", text);
    range.max = parse_count(text.substr(colon + 1), "--nnodes", text);
  }
  DTRAIN_CHECK(range.min <= range.max, "--nnodes '", text, "': MIN (", range.min,
               ") is larger than MAX (", range.max, ")");
  return range;
}

std::vector<std::string> detect_local_devices() {
  std::vector<std::string> devices;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr) {
    // CUDA stops at the first entry it cannot parse; "" and "-1" hide every GPU.
    for (const std::string& entry : split(visible, ',')) {
      if (entry.empty() || entry[0] == '-') {
        break;
      }
      devices.push_back(entry);
    }
    return devices;
  }
  std::error_code ec;
  const std::filesystem::path gpus("/proc/driver/nvidia/gpus");
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(gpus, ec)) {
    (void)entry;
    ++count;
  }
  for (int i = 0; i < count; ++i) {
    devices.push_back(std::to_string(i));
  }
  return devices;
}

int parse_nproc_per_node(const std::string& text, const std::vector<std::string>& devices) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (text == "gpu") {
    DTRAIN_CHECK(!devices.empty(),
                 "--nproc-per-node gpu: no GPU is visible on this node (CUDA_VISIBLE_DEVICES, "
                 "/proc/driver/nvidia/gpus); give a number or 'cpu'");
    return static_cast<int>(devices.size());
  }
  if (text == "cpu") {
    return cores;
  }
  if (text == "auto") {
    return devices.empty() ? cores : static_cast<int>(devices.size());
  }
  const auto value = parse_long(text);
  DTRAIN_CHECK(value && *value >= 1 && *value <= 4096, "--nproc-per-node '", text,
               "': expected a positive number, 'gpu', 'cpu' or 'auto'");
  return static_cast<int>(*value);
}

Endpoint parse_endpoint(const std::string& text, std::uint16_t default_port) {
  DTRAIN_CHECK(!text.empty(), "the rendezvous endpoint is empty; expected host:port");
  // Note [IPv6 address syntax]
  const auto parsed = store::net::parse_host_port(text, default_port, "endpoint '" + text + "'",
                                                  "HOST:PORT, or [IPV6]:PORT as in [::1]:29400");
  return {parsed.host, parsed.port};
}

std::string parse_host(const std::string& text, const std::string& flag) {
  return store::net::parse_host(text, flag + " '" + text + "'");
}

Streams StreamsSpec::for_rank(int local_rank) const {
  if (per_rank.empty()) {
    return all;
  }
  const auto it = per_rank.find(local_rank);
  return it == per_rank.end() ? Streams::kNone : it->second;
}

bool StreamsSpec::any() const {
  if (all != Streams::kNone) {
    return true;
  }
  for (const auto& [rank, streams] : per_rank) {
    if (streams != Streams::kNone) {
      return true;
    }
  }
  return false;
}

StreamsSpec parse_streams(const std::string& text, const std::string& flag) {
  StreamsSpec spec;
  if (text.find(':') == std::string::npos) {
    spec.all = parse_streams_value(text, flag, text);
    return spec;
  }
  for (const std::string& item : split(text, ',')) {
    const auto colon = item.find(':');
    DTRAIN_CHECK(colon != std::string::npos, flag, " '", text, "': item '", item,
                 "' is not LOCAL_RANK:VALUE");
    const auto rank = parse_long(item.substr(0, colon));
    DTRAIN_CHECK(rank && *rank >= 0, flag, " '", text, "': '", item.substr(0, colon),
                 "' is not a local rank");
    spec.per_rank[static_cast<int>(*rank)] =
        parse_streams_value(item.substr(colon + 1), flag, text);
  }
  return spec;
}

std::set<int> parse_local_ranks_filter(const std::string& text) {
  std::set<int> ranks;
  if (text.empty()) {
    return ranks;
  }
  for (const std::string& item : split(text, ',')) {
    const auto rank = parse_long(item);
    DTRAIN_CHECK(rank && *rank >= 0, "--local-ranks-filter '", text, "': '", item,
                 "' is not a local rank");
    ranks.insert(static_cast<int>(*rank));
  }
  return ranks;
}

std::map<std::string, std::string> parse_key_values(const std::string& text,
                                                    const std::string& flag) {
  std::map<std::string, std::string> values;
  if (text.empty()) {
    return values;
  }
  for (const std::string& item : split(text, ',')) {
    const auto equals = item.find('=');
    DTRAIN_CHECK(equals != std::string::npos && equals > 0, flag, " '", text, "': item '", item,
                 "' is not KEY=VALUE");
    values[item.substr(0, equals)] = item.substr(equals + 1);
  }
  return values;
}

void apply_rendezvous_conf(LaunchOptions& options, const std::map<std::string, std::string>& conf) {
  for (const auto& [key, value] : conf) {
    if (key == "join_timeout") {
      options.join_timeout = parse_seconds(value, "--rdzv-conf " + key + "=" + value);
    } else if (key == "last_call_timeout") {
      options.last_call_timeout = parse_seconds(value, "--rdzv-conf " + key + "=" + value);
    } else if (key == "heartbeat_timeout") {
      options.heartbeat_timeout = parse_seconds(value, "--rdzv-conf " + key + "=" + value);
    } else if (key == "read_timeout" || key == "timeout") {
      // torchrun's store read timeout: our store calls carry their own deadlines.
      (void)parse_seconds(value, "--rdzv-conf " + key + "=" + value);
    } else {
      throw Error("--rdzv-conf: unknown key '" + key +
                  "'; known: join_timeout, last_call_timeout, heartbeat_timeout, read_timeout");
    }
  }
}

void validate(const LaunchOptions& options) {
  DTRAIN_CHECK(!options.program.empty(), "no program to run: give it after the flags, e.g. ",
               "dtrun --nproc-per-node 2 ./train --epochs 3");
  DTRAIN_CHECK(options.nproc_per_node >= 1, "--nproc-per-node must be positive, got ",
               options.nproc_per_node);
  DTRAIN_CHECK(options.max_restarts >= 0, "--max-restarts must be 0 or more, got ",
               options.max_restarts);
  check_duration(options.monitor_interval, "--monitor-interval");
  check_duration(options.stop_timeout, "--stop-timeout");
  check_duration(options.join_timeout, "--rdzv-conf join_timeout");
  check_duration(options.last_call_timeout, "--rdzv-conf last_call_timeout");
  check_duration(options.heartbeat_timeout, "--rdzv-conf heartbeat_timeout");
  // Agents beat once per check at most (heartbeat_period), so a check
  // interval near the heartbeat timeout would have live nodes taken for lost.
  DTRAIN_CHECK(options.nnodes.max == 1 || 2 * options.monitor_interval <= options.heartbeat_timeout,
               "--monitor-interval ", seconds_text(options.monitor_interval),
               " is more than half of --rdzv-conf heartbeat_timeout (",
               seconds_text(options.heartbeat_timeout),
               " s): agents would be taken for lost between two checks; expected at most ",
               seconds_text(options.heartbeat_timeout / 2));
  DTRAIN_CHECK(options.node_rank >= 0, "--node-rank must be 0 or more, got ", options.node_rank);
  if (options.backend == RendezvousBackend::kStatic) {
    DTRAIN_CHECK(!options.nnodes.elastic(), "--nnodes ", options.nnodes.min, ":",
                 options.nnodes.max,
                 " needs an elastic rendezvous: add --rdzv-backend c10d --rdzv-endpoint HOST:PORT "
                 "(the static backend runs a fixed number of nodes)");
    DTRAIN_CHECK(options.node_rank < options.nnodes.max, "--node-rank ", options.node_rank,
                 " is outside --nnodes ", options.nnodes.max, " (expected 0..",
                 options.nnodes.max - 1, ")");
  }
  for (const auto* spec : {&options.redirects, &options.tee}) {
    for (const auto& [rank, streams] : spec->per_rank) {
      DTRAIN_CHECK(rank < options.nproc_per_node,
                   spec == &options.redirects ? "--redirects" : "--tee", " names local rank ", rank,
                   " but --nproc-per-node is ", options.nproc_per_node);
    }
  }
  for (int rank : options.local_ranks_filter) {
    DTRAIN_CHECK(rank < options.nproc_per_node, "--local-ranks-filter names local rank ", rank,
                 " but --nproc-per-node is ", options.nproc_per_node);
  }
  DTRAIN_CHECK(!(options.bind_devices && options.share_gpu),
               "--bind-devices gives each worker its own GPU, --share-gpu puts them all on one: "
               "choose one");
  if (options.bind_devices) {
    DTRAIN_CHECK(!options.devices.empty(),
                 "--bind-devices: no GPU is visible on this node (CUDA_VISIBLE_DEVICES, "
                 "/proc/driver/nvidia/gpus)");
  }
}

}  // namespace dtrain::launch
