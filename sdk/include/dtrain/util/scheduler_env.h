// What schedulers tell a job's processes, read into what env:// needs.
//
// Where the master is when MASTER_ADDR or MASTER_PORT is not set:
//   - the PyTorch training operator (Kubernetes) and torchrun-style launchers
//     set PET_MASTER_ADDR and PET_MASTER_PORT beside (or instead of) them;
//   - under Slurm (SLURM_JOB_ID), the first node of SLURM_JOB_NODELIST (else
//     SLURM_NODELIST) and the port kSlurmPortBase + SLURM_JOB_ID % kSlurmPortSpan,
//     so every rank of a job derives the same address with nothing exported.
// MASTER_ADDR and MASTER_PORT, when set, win (each on its own).
//
// The operator's other variables (PET_NNODES, PET_NPROC_PER_NODE,
// PET_NODE_RANK, RANK, WORLD_SIZE) are read by operator_pod_env: there RANK
// is the pod's rank among the nodes, a process's rank only with one process
// per pod. Everything here reads through an EnvLookup, so tests pass maps;
// the functions throw dtrain::Error naming a variable whose value is malformed.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace dtrain::util {

// The value of a variable, or nullopt when it is unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// This process's environment.
EnvLookup process_env();

inline constexpr int kSlurmPortBase = 15000;
inline constexpr int kSlurmPortSpan = 20000;

// A setting and where it came from, for messages ("MASTER_ADDR", "the first
// node of SLURM_JOB_NODELIST=node[01-02]").
struct EnvSetting {
  std::string value;
  std::string from;
  bool derived = false;  // not set by the user or a launcher, but worked out here
};

std::optional<EnvSetting> master_addr_from(const EnvLookup& env);
std::optional<EnvSetting> master_port_from(const EnvLookup& env);

// A pod of the PyTorch training operator (PET_NPROC_PER_NODE and
// PET_NODE_RANK set): the nodes, the processes per node and this pod's node
// rank, as torchrun's flags take them.
struct OperatorPodEnv {
  std::string nnodes;             // PET_NNODES: "N", or "MIN:MAX" when elastic
  std::string nproc_per_node;     // PET_NPROC_PER_NODE: a number, or auto, gpu, cpu
  std::optional<int> node_rank;   // PET_NODE_RANK (set with a Master replica)
  std::optional<int> world_size;  // WORLD_SIZE: nodes x processes per node (auto counts 1)
};

// nullopt outside such a pod.
std::optional<OperatorPodEnv> operator_pod_env(const EnvLookup& env);

// Throws, naming what to change, when this process was started straight
// from an operator pod that runs several processes per node (RANK is then
// the pod's rank, not the process's): a launcher such as dtrun, which sets
// LOCAL_RANK, must start them.
void check_not_bare_operator_pod(const EnvLookup& env);

// Throws, naming what to change, when a launcher that starts a node's
// processes itself (dtrun) runs as more than one task per node of a Slurm
// step (srun inherited --ntasks-per-node from the job), or when the step's
// node count is not within `nnodes_min`..`nnodes_max`.
void check_one_launcher_per_node(const EnvLookup& env, int nnodes_min, int nnodes_max);

}  // namespace dtrain::util
