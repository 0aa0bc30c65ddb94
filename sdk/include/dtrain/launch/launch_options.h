// What one dtrun agent is asked to do, after its flags were read: how many
// nodes and workers, where the job meets, how failures are handled, where
// worker output goes. The flag texts torchrun accepts ("1:4", "gpu",
// "host:port", "0:3,1:1") are parsed here so that every mistake is reported,
// naming the flag and the value, before any process starts.
//
//   LaunchOptions options;
//   options.nnodes = parse_nnodes("1:2");
//   options.nproc_per_node = parse_nproc_per_node("2", detect_local_devices());
//   options.program = {"./train", "--epochs", "3"};
//   validate(options);   // throws dtrain::Error on contradictions
//
// All functions are pure (no process, file or network is touched) except
// detect_local_devices(), which reads the environment and /proc, and
// check_log_dir().
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtrain::launch {

// --nnodes: N, or MIN:MAX for an elastic job.
struct NodeRange {
  int min = 1;
  int max = 1;
  bool elastic() const { return min != max; }
};
NodeRange parse_nnodes(const std::string& text);

// The GPUs this node may use, as CUDA_VISIBLE_DEVICES names them: the
// launcher's own CUDA_VISIBLE_DEVICES when set, else one index per GPU the
// NVIDIA driver lists under /proc/driver/nvidia/gpus.
std::vector<std::string> detect_local_devices();

// --nproc-per-node: a count, "gpu" (one per GPU; an error without GPUs),
// "cpu" (one per CPU core) or "auto" (one per GPU, else one per core).
int parse_nproc_per_node(const std::string& text, const std::vector<std::string>& devices);

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
};
// "host:port" or "[v6addr]:port"; a missing port takes default_port. An
// IPv6 address without brackets ("::1:29400") is refused: which part is the
// port cannot be told.
Endpoint parse_endpoint(const std::string& text, std::uint16_t default_port);
// A host given alone (--master-addr, --local-addr): a name, an IPv4 address,
// or an IPv6 address bare (::1, as torchrun takes it) or in brackets;
// returned without brackets. Throws dtrain::Error naming `flag` and `text`.
std::string parse_host(const std::string& text, const std::string& flag);

// Which of a worker's streams go to its log file (torchrun's Std): none,
// stdout, stderr or both.
enum class Streams { kNone = 0, kOut = 1, kErr = 2, kBoth = 3 };
// --redirects / --tee: one value for every local rank ("3"), or per local
// rank ("0:3,1:1"; ranks not named get none).
struct StreamsSpec {
  Streams all = Streams::kNone;
  std::map<int, Streams> per_rank;
  Streams for_rank(int local_rank) const;
  bool any() const;
};
StreamsSpec parse_streams(const std::string& text, const std::string& flag);

// --local-ranks-filter "0,2": only these local ranks' output reaches the console.
std::set<int> parse_local_ranks_filter(const std::string& text);

// Note [Duration range]: every duration dtrun takes (--monitor-interval,
// --stop-timeout, the --rdzv-conf timeouts) lies in [1 ms, one week]. Below
// 1 ms a value rounds to zero, which the store refuses and a poll loop spins
// on; far above a week steady_clock's deadlines overflow (1e20 s wraps to a
// negative wait), and no rendezvous or grace period needs more.
inline constexpr std::chrono::milliseconds kMinDuration{1};
inline constexpr std::chrono::milliseconds kMaxDuration{std::chrono::hours(24 * 7)};

// `text`, a number of seconds, in the range above. Throws dtrain::Error
// that starts with `label` (how the value was given: "--stop-timeout '1e20'",
// "--rdzv-conf join_timeout=0").
std::chrono::milliseconds parse_seconds(const std::string& text, const std::string& label);

// --log-dir: creates `dir` when missing and checks that files can be made in
// it, so a bad directory is named before anything starts. Touches the file
// system; throws dtrain::Error naming the flag, the directory and the reason.
void check_log_dir(const std::string& dir);

// --rdzv-conf "join_timeout=60,last_call_timeout=5": rendezvous settings.
std::map<std::string, std::string> parse_key_values(const std::string& text,
                                                    const std::string& flag);

enum class RendezvousBackend { kStatic, kStore };

struct LaunchOptions {
  NodeRange nnodes;
  int nproc_per_node = 1;
  int node_rank = 0;
  RendezvousBackend backend = RendezvousBackend::kStatic;
  // Where the rendezvous store lives: --master-addr/--master-port for the
  // static backend, --rdzv-endpoint for the store backend.
  Endpoint endpoint{"127.0.0.1", 29500};
  std::string run_id = "none";
  // --role: the workers' ROLE_NAME.
  std::string role = "default";
  // This node's address as other nodes reach it; empty: the address of the
  // interface that routes to the endpoint.
  std::string local_addr;
  int max_restarts = 0;
  std::chrono::milliseconds monitor_interval{100};
  // After SIGTERM, how long workers get before SIGKILL.
  std::chrono::milliseconds stop_timeout{std::chrono::seconds(10)};
  // Rendezvous: how long to wait for --nnodes MIN agents; how long to wait
  // for more once MIN are there; how long a silent agent counts as alive.
  std::chrono::milliseconds join_timeout{std::chrono::seconds(600)};
  std::chrono::milliseconds last_call_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
  // Worker output: log files under log_dir (empty: none unless redirects
  // or tee ask for files, then a fresh temporary directory).
  std::string log_dir;
  StreamsSpec redirects;
  StreamsSpec tee;
  std::set<int> local_ranks_filter;  // empty: every local rank
  // Give each worker its own CUDA_VISIBLE_DEVICES (one of `devices`).
  bool bind_devices = false;
  // --share-gpu: every worker on GPU 0, each its own host to NCCL
  // (DTRAIN_SHARE_GPU=1, dtrain/dist/shared_gpu.h).
  bool share_gpu = false;
  std::vector<std::string> devices;
  // The program and its arguments.
  std::vector<std::string> program;
};

// Applies --rdzv-conf keys (join_timeout, last_call_timeout,
// heartbeat_timeout, in seconds) to options; throws on unknown keys.
void apply_rendezvous_conf(LaunchOptions& options, const std::map<std::string, std::string>& conf);

// Checks the options as a whole; throws dtrain::Error naming the flags
// that contradict each other or the value that is out of range (durations
// too, for options built in code rather than parsed).
void validate(const LaunchOptions& options);

}  // namespace dtrain::launch
