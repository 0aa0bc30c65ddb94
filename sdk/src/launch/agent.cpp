#include "dtrain/launch/agent.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "address.h"
#include "agent_signals.h"
#include "dtrain/launch/failure.h"
#include "dtrain/launch/rendezvous.h"
#include "dtrain/launch/worker_env.h"
#include "dtrain/launch/worker_output.h"
#include "dtrain/launch/worker_process.h"
#include "dtrain/store/prefix_store.h"
#include "dtrain/store/tcp_store.h"
#include "dtrain/util/build_info.h"
#include "dtrain/util/errors.h"
#include "heartbeats.h"
#include "round_records.h"

namespace dtrain::launch {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Lines of a failed worker's output shown in the summary.
constexpr int kTailLines = 20;
constexpr int kTraceLines = 40;  // of a crash trace (failure_tail)
// How long the store's host waits for the other agents to read the job's end.
constexpr milliseconds kExitBarrierTimeout{std::chrono::seconds(30)};

// The run's and round's folders under --log-dir, which was checked at start;
// the file system may still refuse (a full disk, a run id that is no name).
void create_log_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  DTRAIN_CHECK(!ec, "--log-dir: cannot create the worker log directory '", dir, "' (", ec.message(),
               ")");
}

struct Signalled {
  int sig;
};

Streams operator|(Streams a, Streams b) {
  return static_cast<Streams>(static_cast<int>(a) | static_cast<int>(b));
}
bool has(Streams set, Streams one) {
  return (static_cast<int>(set) & static_cast<int>(one)) != 0;
}

class Agent {
 public:
  explicit Agent(const LaunchOptions& options)
      : options_(options),
        program_path_(resolve_program(options.program.front())),
        host_name_(address::host_name()),
        mixed_builds_allowed_(util::mixed_builds_allowed()),
        output_(signals::wake_fd()) {}

  int run();

 private:
  void connect_store();
  void prepare_log_dir();
  NodeInfo make_info();
  void start_workers(const Membership& m);
  Outcome supervise(const Membership& m);
  void record_failure(const Membership& m, int local_rank, const util::ExitStatus& status);
  void stop_workers(int sig);
  // Signals each rank in `signals` (rank -> signal) to dump its flight recorder.
  void ask_for_dumps(int round, const std::map<int, ProgressWatch::DumpAsk>& asks);
  int finish(int round, int members, const Outcome& outcome);
  // The round's failure records: each node's first.
  std::vector<WorkerFailure> round_failures(int round, int members);
  // Before a restart: the ranks the failed workers named as never reaching
  // a collective (the summary's likely causes), which the restart hides.
  void log_likely_causes(int round);
  void exit_barrier(int round);
  void check_signal() {
    if (signals::first() != 0) {
      throw Signalled{signals::first()};
    }
  }

  LaunchOptions options_;
  std::string program_path_;
  std::string host_name_;
  bool mixed_builds_allowed_;  // DTRAIN_ALLOW_MIXED_BUILDS, read before anything starts
  std::string local_addr_;
  std::string log_root_;  // <log dir>/<run id>, or empty for no log files
  bool is_host_ = false;
  std::unique_ptr<store::TcpStoreServer> server_;
  std::shared_ptr<store::Store> store_;
  std::unique_ptr<Rendezvous> rdzv_;
  WorkerOutput output_;
  std::vector<std::unique_ptr<WorkerProcess>> workers_;
  std::vector<int> worker_ranks_;
  int world_size_ = 0;  // the last round's
  bool local_failure_ = false;
  // The last lines of each worker of the last round stopped, by rank: the
  // summary quotes those of a rank the failed ones name as the likely cause.
  std::map<int, std::string> stopped_tails_;
};

void Agent::connect_store() {
  Endpoint& endpoint = options_.endpoint;
  const bool static_backend = options_.backend == RendezvousBackend::kStatic;
  // The static backend's store lives with node rank 0; the store backend's
  // with whichever agent runs on the endpoint's host and gets its port first.
  const bool wants_host =
      static_backend ? options_.node_rank == 0 : address::is_local(endpoint.host);
  std::string busy_port;  // why this agent could not host, when it wanted to
  if (wants_host) {
    try {
      // Port 0 (--standalone): any free port, which only this node needs to know.
      server_ = std::make_unique<store::TcpStoreServer>(endpoint.port);
      endpoint.port = server_->port();
      is_host_ = true;
    } catch (const store::StoreError& e) {
      DTRAIN_CHECK(!static_backend, "node rank 0 hosts the rendezvous store, but ", e.what());
      spdlog::debug("another agent hosts the store on {} ({})",
                    address::host_port(endpoint.host, endpoint.port), e.what());
      busy_port = e.what();
    }
  }
  auto store = std::make_shared<store::TcpStore>(store::TcpStoreOptions()
                                                     .host(endpoint.host)
                                                     .port(endpoint.port)
                                                     .timeout(options_.join_timeout));
  if (!busy_port.empty()) {
    // Usually another agent of this host got the port first; but it may be
    // another program, which would never answer as a store does.
    try {
      store->num_keys();
    } catch (const store::StoreError& e) {
      throw Error("the rendezvous endpoint " + address::host_port(endpoint.host, endpoint.port) +
                  " is taken on this host (" + busy_port +
                  ") by something that is not a dtrun rendezvous store (" + e.what() +
                  "); free the port or choose another --rdzv-endpoint");
    }
  }
  store_ = std::make_shared<store::PrefixStore>("dtrun/" + options_.run_id, store);
  spdlog::info("rendezvous store at {} ({}), run id '{}'",
               address::host_port(endpoint.host, endpoint.port),
               is_host_ ? "hosted by this agent" : "client", options_.run_id);

  local_addr_ = options_.local_addr;
  if (local_addr_.empty()) {
    local_addr_ = address::route_source(endpoint.host, endpoint.port);
  }
  if (local_addr_.empty()) {
    local_addr_ = host_name_;
  }

  RendezvousSettings settings;
  settings.nnodes = options_.nnodes;
  settings.order_by_node_rank = static_backend;
  settings.join_timeout = options_.join_timeout;
  settings.last_call_timeout = options_.last_call_timeout;
  settings.poll_interval = std::min(options_.monitor_interval, milliseconds(100));
  rdzv_ = std::make_unique<Rendezvous>(store_, settings);
}

void Agent::prepare_log_dir() {
  const bool files_wanted = options_.redirects.any() || options_.tee.any();
  std::string base = options_.log_dir;
  if (base.empty() && files_wanted) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtrun_XXXXXX";
    DTRAIN_CHECK(::mkdtemp(pattern.data()) != nullptr, "dtrun: cannot create a log directory ",
                 pattern);
    base = pattern;
  }
  if (!base.empty()) {
    log_root_ = base + "/" + options_.run_id;
    create_log_directory(log_root_);
    spdlog::info("worker logs in {}", log_root_);
  }
}

NodeInfo Agent::make_info() {
  NodeInfo info;
  info.addr = local_addr_;
  info.master_port = address::free_port();
  info.nproc = options_.nproc_per_node;
  info.node_rank = options_.node_rank;
  info.host = host_name_;
  info.store_host = is_host_;
  info.build = util::build_info().identity();
  return info;
}

void Agent::start_workers(const Membership& m) {
  RoundFacts facts;
  facts.master_addr = m.nodes.front().addr;
  // Group rank 0 may host the store and know itself only as a loopback
  // address (--rdzv-endpoint localhost:PORT, as the seed's first node
  // does); the others then reach that machine where they reached the store.
  if (m.group_rank != 0 && m.nodes.front().store_host && address::is_loopback(facts.master_addr)) {
    facts.master_addr = options_.endpoint.host;
  }
  facts.master_port = m.nodes.front().master_port;
  facts.restart_count = m.restarts;
  facts.max_restarts = options_.max_restarts;
  facts.run_id = options_.run_id;
  facts.role = options_.role;
  facts.share_gpu = options_.share_gpu;
  if (options_.bind_devices) {
    facts.bind_devices = options_.devices;
  }
  facts.records = {options_.endpoint.host, options_.endpoint.port,
                   records_prefix(options_.run_id, m.round)};
  const Environment base = current_environment();
  std::string round_dir;
  if (!log_root_.empty()) {
    round_dir = log_root_ + "/round_" + std::to_string(m.round);
    create_log_directory(round_dir);
    facts.flight_recorder_dir = round_dir;
  }
  world_size_ = m.world_size();
  const bool log_everything =
      !options_.log_dir.empty() && !options_.redirects.any() && !options_.tee.any();
  for (int local = 0; local < options_.nproc_per_node; ++local) {
    WorkerPlace place;
    place.local_rank = local;
    place.rank = m.first_rank(m.group_rank) + local;
    place.group_rank = m.group_rank;
    place.world_size = m.world_size();
    place.local_world_size = options_.nproc_per_node;
    place.group_world_size = static_cast<int>(m.nodes.size());
    auto worker = std::make_unique<WorkerProcess>(program_path_, options_.program,
                                                  to_envp(worker_environment(base, place, facts)));

    const Streams redirected = options_.redirects.for_rank(local);
    const Streams to_file =
        log_everything ? Streams::kBoth : redirected | options_.tee.for_rank(local);
    const bool shown =
        options_.local_ranks_filter.empty() || options_.local_ranks_filter.count(local) > 0;
    StreamRoute out{shown && !has(redirected, Streams::kOut),
                    !round_dir.empty() && has(to_file, Streams::kOut)};
    StreamRoute err{shown && !has(redirected, Streams::kErr),
                    !round_dir.empty() && has(to_file, Streams::kErr)};
    const std::string prefix = options_.tee.any() ? "[" + std::to_string(place.rank) + "]:" : "";
    const int out_fd = worker->take_stdout_fd();
    const int err_fd = worker->take_stderr_fd();
    output_.add(place.rank, out_fd, err_fd, out, err,
                round_dir + "/rank_" + std::to_string(place.rank) + ".log", prefix);
    workers_.push_back(std::move(worker));
    worker_ranks_.push_back(place.rank);
  }
  spdlog::info("round {}: started ranks {}..{} of {} (node {} of {}, restart count {}, master {})",
               m.round, worker_ranks_.front(), worker_ranks_.back(), m.world_size(), m.group_rank,
               m.nodes.size(), m.restarts,
               address::host_port(facts.master_addr, facts.master_port));
}

void Agent::record_failure(const Membership& m, int local_rank, const util::ExitStatus& status) {
  const int rank = worker_ranks_[static_cast<std::size_t>(local_rank)];
  spdlog::error("round {}: rank {} (local rank {}) ended with {}", m.round, rank, local_rank,
                status.describe());
  if (local_failure_) {
    return;
  }
  local_failure_ = true;
  const auto seen_at = std::chrono::system_clock::now();
  // Its pipes are at end of file now; read what is left so the tail is complete.
  output_.drain_rank(rank, milliseconds(500));
  WorkerFailure failure;
  failure.rank = rank;
  failure.local_rank = local_rank;
  failure.group_rank = m.group_rank;
  failure.host = host_name_;
  failure.status = status;
  failure.time_ms = std::chrono::duration_cast<milliseconds>(seen_at.time_since_epoch()).count();
  // All the output kept (its last 16 KB), so a long trace's header is found.
  failure.log_tail =
      failure_tail(output_.tail(rank, std::numeric_limits<int>::max()), kTailLines, kTraceLines);
  rdzv_->first(m.round, "failure", encode(failure));
  rdzv_->first(m.round, "failure/" + std::to_string(m.group_rank), encode(failure));
  const int next = m.restarts + 1;
  Outcome outcome;
  outcome.kind = next > options_.max_restarts ? Outcome::Kind::kFatal : Outcome::Kind::kFailed;
  outcome.next_restarts = next;
  outcome.text =
      "rank " + std::to_string(rank) + " on " + host_name_ + " ended with " + status.describe();
  rdzv_->settle(m.round, outcome);
}

Outcome Agent::supervise(const Membership& m) {
  const int members = static_cast<int>(m.nodes.size());
  Heartbeats heartbeats(*rdzv_, m.round, m.group_rank, members,
                        heartbeat_period(options_.heartbeat_timeout, options_.monitor_interval),
                        options_.heartbeat_timeout);
  ProgressWatch progress(m.round, worker_ranks_, options_.heartbeat_timeout);
  bool marked_success = false;
  local_failure_ = false;
  // Output is passed on as it arrives; the checks below run once per
  // monitor interval however chatty the workers are, so the store is not flooded.
  auto next_check = Clock::now();
  std::vector<int> exit_fds;
  while (true) {
    exit_fds.clear();
    for (const auto& worker : workers_) {
      if (worker->running()) {
        exit_fds.push_back(worker->exit_fd());
      }
    }
    const auto wait = std::chrono::duration_cast<milliseconds>(next_check - Clock::now());
    // A worker's exit wakes the loop at once, so failures are seen (and
    // time-stamped) in the order they happen, not at the next tick.
    const bool exited = output_.pump(std::max(wait, milliseconds(0)), exit_fds);
    check_signal();
    if (!exited && Clock::now() < next_check) {
      continue;
    }
    next_check = Clock::now() + options_.monitor_interval;

    bool all_succeeded = true;
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      WorkerProcess& worker = *workers_[i];
      const bool was_running = worker.running();
      const auto status = worker.poll();
      if (!status) {
        all_succeeded = false;
        continue;
      }
      if (!status->success()) {
        all_succeeded = false;
        if (was_running) {
          record_failure(m, static_cast<int>(i), *status);
        }
      }
    }
    if (all_succeeded && !marked_success) {
      marked_success = true;
      spdlog::info("round {}: this node's workers exited 0", m.round);
      rdzv_->add(m.round, "succeeded", 1);
    }

    if (auto outcome = rdzv_->outcome(m.round)) {
      return *outcome;
    }
    if (marked_success && rdzv_->add(m.round, "succeeded", 0) >= members) {
      return rdzv_->settle(m.round, {Outcome::Kind::kDone, m.restarts, "every worker exited 0"});
    }

    const auto now = Clock::now();
    if (heartbeats.due(now)) {
      ask_for_dumps(m.round, progress.check(*rdzv_, now));
      if (const auto silent = heartbeats.beat_and_check(now)) {
        const NodeInfo& node = m.nodes[static_cast<std::size_t>(*silent)];
        const int next = m.restarts + 1;
        Outcome lost;
        lost.kind = next > options_.max_restarts ? Outcome::Kind::kFatal : Outcome::Kind::kLost;
        lost.next_restarts = next;
        lost.text = "node " + std::to_string(*silent) + " (" + node.host + ", " + node.addr +
                    ") sent no heartbeat for " +
                    std::to_string(options_.heartbeat_timeout.count() / 1000.0) + " s";
        return rdzv_->settle(m.round, lost);
      }
      if (members < options_.nnodes.max && rdzv_->waiting(m.round, members) > 0) {
        return rdzv_->settle(m.round,
                             {Outcome::Kind::kRejoin, m.restarts, "a node is waiting to join"});
      }
    }
  }
}

void Agent::ask_for_dumps(int round, const std::map<int, ProgressWatch::DumpAsk>& asks) {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    // The process that recorded alone, and only within this worker's group:
    // others have no handler, and the signal's default action ends a process.
    const auto it = asks.find(worker_ranks_[i]);
    if (it != asks.end() && workers_[i]->running() &&
        ::getpgid(static_cast<pid_t>(it->second.pid)) == workers_[i]->pid()) {
      ::kill(static_cast<pid_t>(it->second.pid), it->second.signal);
    }
  }
  if (!asks.empty()) {
    spdlog::warn(
        "round {}: a rank has waited in one collective for {} s; asked this node's ranks "
        "to dump their flight recorders",
        round, options_.heartbeat_timeout.count() / 1000.0);
  }
}

void Agent::stop_workers(int sig) {
  for (auto& worker : workers_) {
    worker->signal_group(sig);
    if (sig != SIGKILL) {
      worker->signal_group(SIGCONT);  // a stopped worker acts on it only when continued
    }
  }
  auto all_ended = [&] {
    bool ended = true;
    for (auto& worker : workers_) {
      ended = worker->poll().has_value() && ended;
    }
    return ended;
  };
  // A second signal (a second Ctrl-C) cuts the grace period short.
  const int signals_before = signals::count();
  const auto deadline = Clock::now() + options_.stop_timeout;
  while (!all_ended() && Clock::now() < deadline && signals::count() <= signals_before) {
    signals::drain();
    output_.pump(milliseconds(20));
  }
  if (!all_ended()) {
    spdlog::warn("workers still running after signal {}; sending SIGKILL", sig);
    for (auto& worker : workers_) {
      worker->signal_group(SIGKILL);
    }
    const auto kill_deadline = Clock::now() + std::chrono::seconds(10);
    while (!all_ended() && Clock::now() < kill_deadline) {
      signals::drain();
      output_.pump(milliseconds(20));
    }
  }
  workers_.clear();  // kills and reaps anything left
  const std::vector<int> stopped_ranks = std::move(worker_ranks_);
  worker_ranks_.clear();
  // Before draining: an orphan may hold a worker's pipe open.
  if (const int orphans = kill_orphans(); orphans > 0) {
    spdlog::info("ended {} process(es) that workers left behind", orphans);
  }
  signals::drain();
  output_.drain(milliseconds(500));
  stopped_tails_.clear();
  for (const int rank : stopped_ranks) {
    stopped_tails_[rank] =
        failure_tail(output_.tail(rank, std::numeric_limits<int>::max()), kTailLines, kTraceLines);
  }
  output_.clear();
}

void Agent::exit_barrier(int round) {
  rdzv_->add(round, "acked", 1);
  if (!is_host_) {
    return;
  }
  // Every agent that joined the round, admitted or waiting, reads the end first.
  const auto deadline = Clock::now() + kExitBarrierTimeout;
  while (Clock::now() < deadline && signals::first() == 0) {
    if (rdzv_->add(round, "acked", 0) >= rdzv_->add(round, "joined", 0)) {
      return;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  spdlog::warn("not every agent confirmed the end of the job within {} s; closing the store",
               kExitBarrierTimeout.count() / 1000);
}

std::vector<WorkerFailure> Agent::round_failures(int round, int members) {
  // Each node's first failure; an agent admitted to no round knows only the
  // one that settled the round.
  std::vector<WorkerFailure> failures;
  for (int group = 0; group < members; ++group) {
    if (const auto text = rdzv_->read(round, "failure/" + std::to_string(group))) {
      if (auto failure = decode_failure(*text)) {
        failures.push_back(*failure);
      }
    }
  }
  if (failures.empty()) {
    if (const auto text = rdzv_->read(round, "failure")) {
      if (auto failure = decode_failure(*text)) {
        failures.push_back(*failure);
      }
    }
  }
  return failures;
}

void Agent::log_likely_causes(int round) {
  std::istringstream lines(format_likely_causes(read_round_records(*rdzv_, round, world_size_)));
  std::string line;
  while (std::getline(lines, line)) {
    spdlog::warn("round {}: {}", round, line.substr(line.find_first_not_of(' ')));
  }
}

int Agent::finish(int round, int members, const Outcome& outcome) {
  if (outcome.kind == Outcome::Kind::kDone) {
    exit_barrier(round);
    spdlog::info("job finished: every worker exited 0 (round {}, {} restart{}{})", round,
                 outcome.next_restarts, outcome.next_restarts == 1 ? "" : "s",
                 members > 0 ? ", " + std::to_string(members) + " node(s)" : "");
    return 0;
  }
  const std::vector<WorkerFailure> failures = round_failures(round, members);
  // Before the exit barrier, after which the store's host may close it.
  const JobRecords records = read_round_records(*rdzv_, round, world_size_);
  exit_barrier(round);
  const int restarts = outcome.next_restarts - 1;
  std::string summary;
  if (!failures.empty()) {
    summary =
        format_failure_summary(failures, restarts, options_.max_restarts, records, stopped_tails_);
  } else {
    summary = "dtrun: job failed after " + std::to_string(restarts) +
              " restart(s) (--max-restarts " + std::to_string(options_.max_restarts) +
              "): " + outcome.text + "\n";
  }
  spdlog::default_logger()->flush();
  std::fputs(summary.c_str(), stderr);
  std::fflush(stderr);
  return 1;
}

int Agent::run() {
  prepare_log_dir();
  connect_store();
  const auto interrupted = [] { return signals::first() != 0; };
  try {
    while (true) {
      const JoinResult joined = rdzv_->join([this] { return make_info(); }, interrupted);
      if (!joined.membership) {
        spdlog::info("the job ended ({}) before this node was admitted",
                     kind_name(joined.final_outcome->kind));
        return finish(joined.round, 0, *joined.final_outcome);
      }
      const Membership& m = *joined.membership;
      if (const auto mixed = builds_disagreement(m.nodes)) {
        if (!mixed_builds_allowed_) {
          // Every agent of the round finds the same and settles the same.
          const Outcome ended =
              rdzv_->settle(m.round, {Outcome::Kind::kFatal, m.restarts + 1, *mixed});
          return finish(m.round, static_cast<int>(m.nodes.size()), ended);
        }
        spdlog::warn("{}; running anyway, as DTRAIN_ALLOW_MIXED_BUILDS=1 asks", *mixed);
      }
      start_workers(m);
      const Outcome outcome = supervise(m);
      if (outcome.kind != Outcome::Kind::kDone) {
        spdlog::warn("round {} ends: {}{}", m.round, outcome.text,
                     outcome.final() ? "" : "; restarting the group");
      }
      stop_workers(SIGTERM);
      if (outcome.final()) {
        return finish(m.round, static_cast<int>(m.nodes.size()), outcome);
      }
      if (outcome.kind == Outcome::Kind::kFailed) {
        log_likely_causes(m.round);
      }
    }
  } catch (const Rendezvous::Interrupted&) {
    spdlog::warn("got signal {} while waiting to join; exiting", signals::first());
    return 128 + signals::first();
  } catch (const Signalled& s) {
    spdlog::warn("got signal {}; passing it on to the workers", s.sig);
    stop_workers(s.sig);
    return 128 + s.sig;
  } catch (const store::StoreError& e) {
    spdlog::error("lost the rendezvous store at {}: {}",
                  address::host_port(options_.endpoint.host, options_.endpoint.port), e.what());
    stop_workers(SIGTERM);
    return 1;
  } catch (...) {
    stop_workers(SIGTERM);
    throw;
  }
}

}  // namespace

int run_agent(const LaunchOptions& options) {
  validate(options);
  signals::install();
  become_subreaper();
  Agent agent(options);
  return agent.run();
}

}  // namespace dtrain::launch
