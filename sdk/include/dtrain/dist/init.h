// The torch.distributed module API in C++: one default process group per
// process, created by init_process_group, and free functions that run
// collectives on it (or on a group from new_group).
//
//   dtrain::dist::init_process_group();          // env://, backend "auto"
//   auto t = torch::ones({4}) * (dist::get_rank() + 1);
//   dtrain::dist::all_reduce(t);                 // blocking
//   auto work = dtrain::dist::all_reduce(t, {.op = ReduceOp::kMax}, /*async_op=*/true);
//   work->wait();
//
// Ranks passed to the free functions (src, dst) are ranks of the default
// group, also with a smaller group, as in torch.distributed. Errors: a bad init_method, a rank
// outside the world, two processes claiming one rank, ranks disagreeing on the world size, or a
// master that never answers each raise dtrain::Error (or a subclass) on
// that rank within the timeout, saying which.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/dist/process_group.h"
#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

struct InitOptions {
  // "gloo", "nccl", "mpi", or "auto" (nccl when CUDA is available, else gloo).
  std::string backend = "auto";
  // "env://" (MASTER_ADDR, MASTER_PORT), "tcp://host:port" or "file:///path".
  // IPv6 as torch writes it: "tcp://[::1]:29500", MASTER_ADDR=::1 (bare, or
  // [::1]); an address that reads two ways ("tcp://::1:29500") raises.
  // Under OpenMPI's mpirun, env:// without MASTER_PORT has rank 0 host the
  // store on a free port and share it through MPI (Note [The store's address
  // through MPI] in src/dist/mpi_store_address.cpp). Under torchrun
  // (TORCHELASTIC_USE_AGENT_STORE=True) env:// joins the store torchrun's
  // agent hosts (PyTorch's TCPStore, through TorchTcpStore). file://: the
  // last rank out of destroy_process_group() deletes the file, so the URL
  // serves the next job; a file left by a killed job must be deleted first.
  std::string init_method = "env://";
  // -1: from the launcher's environment (dtrun/torchrun, mpirun, srun).
  int rank = -1;
  int world_size = -1;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // Network interface for the backend's traffic (e.g. "eth1", "lo"); empty:
  // GLOO_SOCKET_IFNAME for gloo, NCCL_SOCKET_IFNAME for nccl. gloo binds this
  // interface's address, or of a comma-separated list ("eth0,eth1", as
  // torch takes) the first's, every name having to exist (Note [Which
  // address Gloo binds] in process_group_gloo.h); for nccl it is exported as NCCL_SOCKET_IFNAME
  // before the communicator is created (NCCL reads it once per process, at
  // its first communicator), and there it is NCCL's list of name prefixes
  // ("eth", "^docker", "=eth0"). A name, or a list, that chooses no
  // interface here raises dtrain::Error naming it. mpi ignores it (use
  // mpirun's --mca btl_tcp_if_include).
  std::string socket_ifname{};
};

// Where and how a job meets, after reading options and environment.
struct Rendezvous {
  // kMpi: the TCP store's address comes from rank 0 through MPI; `host` is
  // MASTER_ADDR or empty until then.
  enum class Kind { kTcp, kFile, kMpi } kind = Kind::kTcp;
  std::string host;
  std::uint16_t port = 0;
  std::string path;
  int rank = 0;
  int world_size = 1;
  // How env:// found a master the user did not name (a Slurm job's first
  // node, its job id's port; util/scheduler_env.h), for messages; else empty.
  std::string master_from;
};

// Resolves init_method, rank and world size; throws dtrain::Error naming
// what is missing or malformed (no process is contacted).
Rendezvous resolve_rendezvous(const InitOptions& options);

// Also makes the group's rank this process's job_rank() and the rank in
// dtrain's log prefix (util::set_log_rank); the logger itself, signal
// handlers and malloc's settings are the program's (util::set_up_process).
ProcessGroupPtr init_process_group(const InitOptions& options = {});
bool is_initialized();
// Throws dtrain::Error when init_process_group has not been called.
ProcessGroupPtr default_group();
std::shared_ptr<Store> default_store();
int get_rank();
int get_world_size();
// This process's rank on its node, from the launcher (LOCAL_RANK of
// dtrun/torchrun, OMPI_COMM_WORLD_LOCAL_RANK of mpirun, SLURM_LOCALID of
// srun): the GPU to take, as torch.distributed.get_node_local_rank and
// Horovod's hvd.local_rank() give it. Without such a variable, returns
// `fallback_rank` when given, else throws dtrain::Error saying so. Needs no
// process group.
int get_node_local_rank(std::optional<int> fallback_rank = std::nullopt);
// Finishes queued work and closes every group.
void destroy_process_group();

// A group of some ranks of the default group. Every rank of the default
// group must call it, with the same ranks, in the same order; ranks not in
// the group get nullptr.
ProcessGroupPtr new_group(std::vector<int> ranks);

// Between a group's own ranks and the default group's, as in
// torch.distributed. `group` nullptr means the default group. Throws
// dtrain::Error naming the group when the rank is not one of its members.
int get_group_rank(const ProcessGroupPtr& group, int global_rank);
int get_global_rank(const ProcessGroupPtr& group, int group_rank);
std::vector<int> get_process_group_ranks(const ProcessGroupPtr& group);

// Blocking unless async_op; `group` nullptr means the default group.
// `src` and `dst` are ranks in the default group even when `group` is a
// smaller one, as in torch.distributed (dist.broadcast(t, src=2, group=g)
// sends from global rank 2, which must be in g); a rank outside `group` is
// refused, naming the group's ranks. The methods of ProcessGroup take the
// group's own ranks instead, as c10d's do.
void send(const at::Tensor& tensor, int dst, const ProcessGroupPtr& group = nullptr, int tag = 0);
void recv(at::Tensor& tensor, int src, const ProcessGroupPtr& group = nullptr, int tag = 0);
WorkPtr isend(const at::Tensor& tensor, int dst, const ProcessGroupPtr& group = nullptr,
              int tag = 0);
WorkPtr irecv(at::Tensor& tensor, int src, const ProcessGroupPtr& group = nullptr, int tag = 0);
WorkPtr broadcast(at::Tensor& tensor, int src, const ProcessGroupPtr& group = nullptr,
                  bool async_op = false);
WorkPtr all_reduce(at::Tensor& tensor, ReduceOp op = ReduceOp::kSum,
                   const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr reduce(at::Tensor& tensor, int dst, ReduceOp op = ReduceOp::kSum,
               const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr all_gather(std::vector<at::Tensor>& tensor_list, const at::Tensor& tensor,
                   const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr gather(const at::Tensor& tensor, std::vector<at::Tensor>& gather_list, int dst,
               const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr scatter(at::Tensor& tensor, const std::vector<at::Tensor>& scatter_list, int src,
                const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& input_list,
                       ReduceOp op = ReduceOp::kSum, const ProcessGroupPtr& group = nullptr,
                       bool async_op = false);
WorkPtr all_to_all(std::vector<at::Tensor>& output_list, const std::vector<at::Tensor>& input_list,
                   const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr barrier(const ProcessGroupPtr& group = nullptr, bool async_op = false);

// Every rank's `value`, in rank order, strings of any length and content
// (torch.distributed's all_gather_object for text): two all_gathers, the
// lengths and then the bytes padded to the longest. Blocking; every rank
// of the group must call it.
std::vector<std::string> all_gather_strings(const std::string& value,
                                            const ProcessGroupPtr& group = nullptr);

}  // namespace dtrain::dist
