// init_process_group and the module-level API around the default group.
#include "dtrain/dist/init.h"

#include <ATen/Context.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "dtrain/config.h"
#include "dtrain/dist/debug_process_group.h"
#include "dtrain/dist/process_group_gloo.h"
#include "dtrain/dist/process_group_nccl.h"
#include "dtrain/dist/shared_gpu.h"
#include "dtrain/dist/store_names.h"
#include "dtrain/store/host_port.h"
#include "dtrain/util/build_info.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/logging.h"
#include "dtrain/util/scheduler_env.h"
#include "interfaces.h"
#include "membership.h"
#include "mpi_backend.h"
#include "rank_records.h"

namespace dtrain::dist {

namespace {

struct DefaultState {
  std::mutex mutex;
  std::shared_ptr<Store> store;
  ProcessGroupPtr group;
  InitOptions options;
  std::string backend;
  std::string master_host;  // the store's host; empty with file://
  int groups_created = 0;
};

DefaultState& state() {
  static DefaultState s;
  return s;
}

bool has_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

std::string resolve_backend(const std::string& requested) {
  if (requested == "auto") {
    return at::hasCUDA() ? "nccl" : "gloo";
  }
  DTRAIN_CHECK(requested == "gloo" || requested == "nccl" || requested == "mpi",
               "init_process_group: backend '", requested, "' is not one of gloo, nccl, mpi, auto");
  return requested;
}

// What every group of the job is built from, besides its ranks and name.
struct GroupSettings {
  std::string backend;
  std::chrono::milliseconds timeout;
  std::string socket_ifname;  // InitOptions::socket_ifname
  std::string master_host;
};

ProcessGroupPtr make_group(const GroupSettings& settings, std::shared_ptr<Store> store, int rank,
                           int size, const std::string& name) {
  const std::string& backend = settings.backend;
  if (backend == "nccl") {
#if DTRAIN_WITH_CUDA
    if (!settings.socket_ifname.empty()) {
      // NCCL reads its interface from the environment only.
      ::setenv("NCCL_SOCKET_IFNAME", settings.socket_ifname.c_str(), 1);
    }
    // Note [NCCL_SOCKET_IFNAME's rules] (interfaces.h).
    if (const char* ifname = std::getenv("NCCL_SOCKET_IFNAME"); ifname && *ifname) {
      net::check_nccl_socket_ifname(ifname);
    }
    NcclOptions options = NcclOptions::from_env();
    options.timeout = settings.timeout;
    return std::make_shared<ProcessGroupNCCL>(std::move(store), rank, size, options, name);
#else
    throw Error("this build of dtrain has no NCCL backend (built without CUDA)");
#endif
  }
  if (backend == "gloo") {
    GlooOptions options = GlooOptions::from_env();
    options.timeout = settings.timeout;
    if (!settings.socket_ifname.empty()) {
      options.iface = settings.socket_ifname;
    }
    // Note [Which address Gloo binds], rules 1 and 3: the address the store
    // connection uses, or the interface's address in its family.
    if (options.hostname.empty() && !settings.master_host.empty()) {
      const auto towards = net::address_towards(settings.master_host);
      if (options.iface.empty()) {
        options.hostname = towards.value_or("");
      } else {
        options.prefer_ipv6 = towards && towards->find(':') != std::string::npos;
      }
    }
    return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, options, name);
  }
  if (backend == "mpi") {
    return make_mpi_group(store, rank, size, settings.timeout, name);
  }
  throw Error("init_process_group: the " + backend +
              " backend is not available in this build of dtrain yet");
}

GroupSettings settings_of(const DefaultState& s) {
  return {s.backend, s.options.timeout, s.options.socket_ifname, s.master_host};
}

const ProcessGroupPtr& group_or_default(const ProcessGroupPtr& group) {
  if (group) {
    return group;
  }
  DTRAIN_CHECK(state().group != nullptr, "dtrain::dist: call init_process_group() first");
  return state().group;
}

// The group rank of `global_rank`, the `what` ("src", "dst") of `op`; the
// default group's ranks are its own, so they pass unchanged.
int group_rank_of(const ProcessGroupPtr& group, int global_rank, const char* op, const char* what) {
  if (!group) {
    return global_rank;
  }
  const std::vector<int>& ranks = group->global_ranks();
  const auto found = std::find(ranks.begin(), ranks.end(), global_rank);
  DTRAIN_CHECK(found != ranks.end(), op, ": ", what, " ", global_rank,
               " is not a member of group '", group->name(), "' (global ranks ",
               fmt::format("{}", fmt::join(ranks, ", ")),
               "): dtrain::dist's functions take ranks of the default group, as "
               "torch.distributed's do; the group's own methods take its ranks");
  return static_cast<int>(found - ranks.begin());
}

// The Work that `issue` returns, waited on here unless async_op.
WorkPtr finish(bool async_op, c10::function_ref<WorkPtr()> issue) {
  return async_op ? issue() : issue_and_wait(issue);
}

}  // namespace

namespace {

// env://'s master: MASTER_ADDR and MASTER_PORT, else what the scheduler says
// (util/scheduler_env.h: PET_MASTER_*, or a Slurm job's first node and its
// job id's port).
void env_master(Rendezvous& rdzv) {
  const util::EnvLookup env = util::process_env();
  const std::optional<util::EnvSetting> addr = util::master_addr_from(env);
  DTRAIN_CHECK(addr, "init_process_group: init_method env:// needs MASTER_ADDR to be set (or ",
               "PET_MASTER_ADDR, or a Slurm job's SLURM_JOB_NODELIST)");
  const std::optional<util::EnvSetting> port = util::master_port_from(env);
  DTRAIN_CHECK(port, "init_process_group: init_method env:// needs MASTER_PORT to be set (or ",
               "PET_MASTER_PORT, or a Slurm job's SLURM_JOB_ID)");
  // Note [IPv6 address syntax] (host_port.h): MASTER_ADDR as torchrun
  // gives it (::1 bare), tcp:// as a URL ([::1] in brackets).
  rdzv.host = store::net::parse_host(addr->value, addr->from + " '" + addr->value + "'");
  rdzv.port = store::net::parse_port(port->value, port->from);
  if (addr->derived || port->derived) {
    rdzv.master_from = "master " + addr->value + ":" + port->value + " from " + addr->from +
                       (port->derived ? " and " + port->from : "");
    spdlog::debug("init_process_group: {}", rdzv.master_from);
  }
}

}  // namespace

Rendezvous resolve_rendezvous(const InitOptions& options) {
  Rendezvous rdzv;
  const util::LaunchEnv launch = util::read_launch_env();
  // -1 (the default) means "from the environment"; other values are the caller's.
  DTRAIN_CHECK(options.rank >= -1, "init_process_group: rank must be >= 0 (or -1: from the ",
               "environment), got ", options.rank);
  DTRAIN_CHECK(options.world_size >= 1 || options.world_size == -1,
               "init_process_group: world_size must be >= 1 (or -1: from the environment), got ",
               options.world_size);
  rdzv.rank = options.rank >= 0 ? options.rank : launch.rank.value_or(-1);
  rdzv.world_size = options.world_size >= 1 ? options.world_size : launch.world_size.value_or(-1);
  DTRAIN_CHECK(rdzv.rank >= 0,
               "init_process_group: no rank given and none in the environment (RANK, ",
               "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)");
  DTRAIN_CHECK(rdzv.world_size >= 1,
               "init_process_group: no world size given and none in the environment ",
               "(WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS)");
  DTRAIN_CHECK(rdzv.rank < rdzv.world_size, "init_process_group: rank ", rdzv.rank,
               " is outside the world of size ", rdzv.world_size);
  if (options.rank < 0) {
    util::check_not_bare_operator_pod(util::process_env());
  }

  const std::string& method = options.init_method;
  // Note [IPv6 address syntax] (host_port.h): MASTER_ADDR as torchrun
  // gives it (::1 bare), tcp:// as a URL ([::1] in brackets).
  auto master_addr = [] {
    const std::string text = std::getenv("MASTER_ADDR");
    return store::net::parse_host(text, "MASTER_ADDR '" + text + "'");
  };
  if (method == "env://" && launch.source == "openmpi" && !has_env("MASTER_PORT")) {
    rdzv.kind = Rendezvous::Kind::kMpi;  // Note [The store's address through MPI]
    rdzv.host = has_env("MASTER_ADDR") ? master_addr() : "";
  } else if (method == "env://") {
    env_master(rdzv);
  } else if (method.rfind("tcp://", 0) == 0) {
    const store::net::HostPort address =
        store::net::parse_host_port(method.substr(6), std::nullopt, "init_method '" + method + "'",
                                    "tcp://host:port, or tcp://[v6addr]:port for IPv6");
    rdzv.host = address.host;
    rdzv.port = address.port;
  } else if (method.rfind("file://", 0) == 0) {
    rdzv.kind = Rendezvous::Kind::kFile;
    rdzv.path = method.substr(7);
    DTRAIN_CHECK(!rdzv.path.empty() && rdzv.path[0] == '/', "init_method '", method,
                 "' must name an absolute path: file:///path/to/file");
  } else {
    throw Error("init_method '" + method + "' is not env://, tcp://host:port or file:///path");
  }
  return rdzv;
}

namespace {

// What to change when a master the scheduler's variables named cannot be reached.
std::string unreachable_master_hint(const Rendezvous& rdzv) {
  if (rdzv.master_from.empty()) {
    return "";
  }
  return " (" + rdzv.master_from + "; export MASTER_ADDR with an address every node reaches, " +
         "and MASTER_PORT with a free port, to choose another)";
}

// The store of a tcp:// or env:// rendezvous: torchrun's agent hosts one of
// PyTorch's for its workers and says so; dtrun sets the variable to False
// and worker 0 hosts ours.
std::shared_ptr<Store> tcp_store(const Rendezvous& rdzv, std::chrono::milliseconds timeout) {
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool torch_agent_hosts = agent != nullptr && std::string(agent) == "True";
  try {
    if (torch_agent_hosts) {
      return std::make_shared<TorchTcpStore>(rdzv.host, rdzv.port, timeout);
    }
    return std::make_shared<TcpStore>(TcpStoreOptions()
                                          .host(rdzv.host)
                                          .port(rdzv.port)
                                          .is_server(rdzv.rank == 0)
                                          .timeout(timeout));
  } catch (const StoreTimeoutError& e) {
    throw CollectiveTimeoutError("init_process_group: rank " + std::to_string(rdzv.rank) +
                                 " could not reach the master: " + e.what() +
                                 unreachable_master_hint(rdzv));
  } catch (const Error& e) {
    if (rdzv.master_from.empty()) {
      throw;
    }
    throw Error(std::string(e.what()) + unreachable_master_hint(rdzv));
  }
}

}  // namespace

ProcessGroupPtr init_process_group(const InitOptions& options) {
  DefaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  DTRAIN_CHECK(s.group == nullptr,
               "init_process_group: already initialized; call destroy_process_group() first");
  DTRAIN_CHECK(options.timeout.count() > 0, "init_process_group: timeout must be positive");
  const std::string backend = resolve_backend(options.backend);
  Rendezvous rdzv = resolve_rendezvous(options);
  if (backend == "mpi") {
    check_mpi_world(rdzv.rank, rdzv.world_size);  // before anyone waits in the store
  }
  const util::LaunchEnv launch = util::read_launch_env();
  // The job's rank, and the log prefix's where the program chose dtrain's
  // logging; malloc's settings stay the program's (Note [Nothing happens on
  // load], util/process_setup.h).
  util::set_log_rank(rdzv.rank, launch.local_rank);
  if (backend == "nccl" && launch.share_gpu) {
    use_shared_gpu_nccl_variables(rdzv.rank);  // before NCCL's first call in this process
  }

  std::shared_ptr<Store> store;
  if (rdzv.kind == Rendezvous::Kind::kFile) {
    store = std::make_shared<FileStore>(rdzv.path, options.timeout);
  } else if (rdzv.kind == Rendezvous::Kind::kMpi) {
    store = tcp_store_through_mpi(rdzv, options.timeout);  // now kTcp, with host and port
  } else {
    store = tcp_store(rdzv, options.timeout);
  }
  // Keys of a restarted job must not meet the previous attempt's.
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  auto job_store = std::make_shared<PrefixStore>(
      "dtrain/" + std::string(restart && *restart ? restart : "0"), store);
  const std::string stale_hint =
      rdzv.kind == Rendezvous::Kind::kFile
          ? " (or '" + rdzv.path + "' holds a previous job's records: a job that was killed " +
                "leaves its file behind; delete it, or use a new file)"
          : "";
  const auto* tcp_store = dynamic_cast<const TcpStore*>(store.get());
  const MemberOptions member{.rank = rdzv.rank,
                             .world_size = rdzv.world_size,
                             .build = util::build_info().identity(),
                             .allow_mixed_builds = util::mixed_builds_allowed(),
                             .timeout = options.timeout,
                             .stale_hint = stale_hint,
                             .hosts_store = tcp_store && tcp_store->hosts_server()};
  PrefixStore init_store("init", job_store);
  check_membership(init_store, member);
  if (auto* file_store = dynamic_cast<FileStore*>(store.get())) {
    // Joined: every rank counts itself out at the end and the last deletes
    // the file, so the next job on the same URL starts from an empty store
    // (a job of mixed builds too, which fails just below).
    file_store->delete_when_all_done(rdzv.world_size);
  }
  check_one_build(init_store, member);

  const std::string master_host = rdzv.kind == Rendezvous::Kind::kTcp ? rdzv.host : "";
  s.group = wrap_for_debug_if_enabled(
      make_group({backend, options.timeout, options.socket_ifname, master_host}, job_store,
                 rdzv.rank, rdzv.world_size, "default"),
      job_store, options.timeout);
  s.store = job_store;
  s.options = options;
  s.backend = backend;
  s.master_host = master_host;
  s.groups_created = 0;
  spdlog::info("process group ready: rank {} of {}, backend {}, {}", rdzv.rank, rdzv.world_size,
               backend, util::build_info().identity());
  detail::start_rank_records(rdzv.rank, rdzv.world_size);
  return s.group;
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().group != nullptr;
}

ProcessGroupPtr default_group() {
  std::lock_guard<std::mutex> lock(state().mutex);
  DTRAIN_CHECK(state().group != nullptr, "dtrain::dist: call init_process_group() first");
  return state().group;
}

std::shared_ptr<Store> default_store() {
  std::lock_guard<std::mutex> lock(state().mutex);
  DTRAIN_CHECK(state().store != nullptr, "dtrain::dist: call init_process_group() first");
  return state().store;
}

int get_rank() {
  return default_group()->rank();
}
int get_world_size() {
  return default_group()->size();
}

void destroy_process_group() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().group.reset();
  state().store.reset();
}

ProcessGroupPtr new_group(std::vector<int> ranks) {
  DefaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  DTRAIN_CHECK(s.group != nullptr, "new_group: call init_process_group() first");
  std::sort(ranks.begin(), ranks.end());
  DTRAIN_CHECK(!ranks.empty(), "new_group: the rank list is empty");
  DTRAIN_CHECK(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end(), "new_group: rank ",
               *std::adjacent_find(ranks.begin(), ranks.end()), " is listed twice");
  DTRAIN_CHECK(ranks.front() >= 0 && ranks.back() < s.group->size(),
               "new_group: ranks must be in 0..", s.group->size() - 1, ", got ",
               ranks.front() < 0 ? ranks.front() : ranks.back());
  // Every rank counts the groups it was asked for, so all agree on the name.
  const std::string name = "group" + std::to_string(++s.groups_created);
  const auto me = std::find(ranks.begin(), ranks.end(), s.group->rank());
  if (me == ranks.end()) {
    return nullptr;
  }
  ProcessGroupPtr group = wrap_for_debug_if_enabled(
      make_group(settings_of(s), s.store, static_cast<int>(me - ranks.begin()),
                 static_cast<int>(ranks.size()), name),
      s.store, s.options.timeout);
  group->set_global_ranks(std::move(ranks));
  return group;
}

int get_node_local_rank(std::optional<int> fallback_rank) {
  if (const std::optional<int> local_rank = util::read_launch_env().local_rank) {
    return *local_rank;
  }
  DTRAIN_CHECK(fallback_rank.has_value(),
               "get_node_local_rank: no launcher variable gives this process's local rank "
               "(LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID); pass a fallback");
  return *fallback_rank;
}

int get_group_rank(const ProcessGroupPtr& group, int global_rank) {
  return group_rank_of(group_or_default(group), global_rank, "get_group_rank", "rank");
}

int get_global_rank(const ProcessGroupPtr& group, int group_rank) {
  const ProcessGroupPtr& g = group_or_default(group);
  DTRAIN_CHECK(group_rank >= 0 && group_rank < g->size(), "get_global_rank: rank ", group_rank,
               " is outside group '", g->name(), "' of size ", g->size());
  return g->global_ranks()[group_rank];
}

std::vector<int> get_process_group_ranks(const ProcessGroupPtr& group) {
  return group_or_default(group)->global_ranks();
}

void send(const at::Tensor& tensor, int dst, const ProcessGroupPtr& group, int tag) {
  isend(tensor, dst, group, tag)->wait();
}
void recv(at::Tensor& tensor, int src, const ProcessGroupPtr& group, int tag) {
  irecv(tensor, src, group, tag)->wait();
}
WorkPtr isend(const at::Tensor& tensor, int dst, const ProcessGroupPtr& group, int tag) {
  return group_or_default(group)->send(tensor, group_rank_of(group, dst, "send", "dst"), tag);
}
WorkPtr irecv(at::Tensor& tensor, int src, const ProcessGroupPtr& group, int tag) {
  return group_or_default(group)->recv(tensor, group_rank_of(group, src, "recv", "src"), tag);
}
WorkPtr broadcast(at::Tensor& tensor, int src, const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] {
    return group_or_default(group)->broadcast(
        tensor, {.root = group_rank_of(group, src, "broadcast", "src")});
  });
}
WorkPtr all_reduce(at::Tensor& tensor, ReduceOp op, const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] { return group_or_default(group)->all_reduce(tensor, {.op = op}); });
}
WorkPtr reduce(at::Tensor& tensor, int dst, ReduceOp op, const ProcessGroupPtr& group,
               bool async_op) {
  return finish(async_op, [&] {
    return group_or_default(group)->reduce(
        tensor, {.root = group_rank_of(group, dst, "reduce", "dst"), .op = op});
  });
}
WorkPtr all_gather(std::vector<at::Tensor>& tensor_list, const at::Tensor& tensor,
                   const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] { return group_or_default(group)->all_gather(tensor_list, tensor); });
}
WorkPtr gather(const at::Tensor& tensor, std::vector<at::Tensor>& gather_list, int dst,
               const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] {
    return group_or_default(group)->gather(gather_list, tensor,
                                           {.root = group_rank_of(group, dst, "gather", "dst")});
  });
}
WorkPtr scatter(at::Tensor& tensor, const std::vector<at::Tensor>& scatter_list, int src,
                const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] {
    return group_or_default(group)->scatter(tensor, scatter_list,
                                            {.root = group_rank_of(group, src, "scatter", "src")});
  });
}
WorkPtr reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& input_list, ReduceOp op,
                       const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] {
    return group_or_default(group)->reduce_scatter(output, input_list, {.op = op});
  });
}
WorkPtr all_to_all(std::vector<at::Tensor>& output_list, const std::vector<at::Tensor>& input_list,
                   const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op,
                [&] { return group_or_default(group)->all_to_all(output_list, input_list); });
}
WorkPtr barrier(const ProcessGroupPtr& group, bool async_op) {
  return finish(async_op, [&] { return group_or_default(group)->barrier(); });
}

std::vector<std::string> all_gather_strings(const std::string& value,
                                            const ProcessGroupPtr& group) {
  const int world = group_or_default(group)->size();
  const at::Tensor length = at::tensor({static_cast<int64_t>(value.size())}, at::kLong);
  std::vector<at::Tensor> lengths(static_cast<size_t>(world));
  for (at::Tensor& l : lengths) {
    l = at::empty_like(length);
  }
  all_gather(lengths, length, group);
  int64_t longest = 0;
  for (const at::Tensor& l : lengths) {
    longest = std::max(longest, l.item<int64_t>());
  }
  // Padded to the longest: every rank's block has the same size.
  at::Tensor bytes = at::zeros({longest}, at::kByte);
  std::copy(value.begin(), value.end(), bytes.data_ptr<uint8_t>());
  std::vector<at::Tensor> blocks(static_cast<size_t>(world));
  for (at::Tensor& b : blocks) {
    b = at::empty_like(bytes);
  }
  all_gather(blocks, bytes, group);
  std::vector<std::string> values;
  values.reserve(blocks.size());
  for (size_t r = 0; r < blocks.size(); ++r) {
    const auto* data = reinterpret_cast<const char*>(blocks[r].data_ptr<uint8_t>());
    values.emplace_back(data, static_cast<size_t>(lengths[r].item<int64_t>()));
  }
  return values;
}

}  // namespace dtrain::dist
