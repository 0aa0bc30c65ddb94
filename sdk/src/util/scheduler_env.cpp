#include "dtrain/util/scheduler_env.h"

#include <charconv>
#include <cstdlib>

#include "dtrain/util/errors.h"
#include "dtrain/util/hostlist.h"

namespace dtrain::util {

namespace {

std::optional<long> number(const EnvLookup& env, const std::string& name) {
  const std::optional<std::string> text = env(name);
  if (!text) {
    return std::nullopt;
  }
  long value = -1;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  DTRAIN_CHECK(ec == std::errc() && end == text->data() + text->size() && value >= 0,
               "environment variable ", name, "='", *text, "' is not a non-negative integer");
  return value;
}

// Slurm's node list: the job's (the whole allocation), else the older name.
std::optional<EnvSetting> slurm_nodelist(const EnvLookup& env) {
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (std::optional<std::string> list = env(name)) {
      return EnvSetting{*list, std::string(name) + "=" + *list};
    }
  }
  return std::nullopt;
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') {
      return std::nullopt;
    }
    return std::string(value);
  };
}

std::optional<EnvSetting> master_addr_from(const EnvLookup& env) {
  for (const char* name : {"MASTER_ADDR", "PET_MASTER_ADDR"}) {
    if (std::optional<std::string> value = env(name)) {
      return EnvSetting{*value, name};
    }
  }
  if (!env("SLURM_JOB_ID")) {
    return std::nullopt;
  }
  const std::optional<EnvSetting> list = slurm_nodelist(env);
  if (!list) {
    return std::nullopt;
  }
  return EnvSetting{first_host(list->value), "the first node of " + list->from, true};
}

std::optional<EnvSetting> master_port_from(const EnvLookup& env) {
  for (const char* name : {"MASTER_PORT", "PET_MASTER_PORT"}) {
    if (std::optional<std::string> value = env(name)) {
      return EnvSetting{*value, name};
    }
  }
  const std::optional<long> job = number(env, "SLURM_JOB_ID");
  if (!job) {
    return std::nullopt;
  }
  const long port = kSlurmPortBase + *job % kSlurmPortSpan;
  return EnvSetting{std::to_string(port),
                    "SLURM_JOB_ID=" + std::to_string(*job) + " (" + std::to_string(kSlurmPortBase) +
                        " + the job id % " + std::to_string(kSlurmPortSpan) + ")",
                    true};
}

std::optional<OperatorPodEnv> operator_pod_env(const EnvLookup& env) {
  const std::optional<std::string> nproc = env("PET_NPROC_PER_NODE");
  const std::optional<std::string> nnodes = env("PET_NNODES");
  if (!nproc && !nnodes) {
    return std::nullopt;
  }
  OperatorPodEnv pod;
  pod.nnodes = nnodes.value_or("1");
  pod.nproc_per_node = nproc.value_or("1");
  if (const std::optional<long> rank = number(env, "PET_NODE_RANK")) {
    pod.node_rank = static_cast<int>(*rank);
  }
  if (const std::optional<long> world = number(env, "WORLD_SIZE")) {
    pod.world_size = static_cast<int>(*world);
  }
  return pod;
}

void check_not_bare_operator_pod(const EnvLookup& env) {
  const std::optional<OperatorPodEnv> pod = operator_pod_env(env);
  if (!pod || env("LOCAL_RANK") || env("TORCHELASTIC_RUN_ID")) {
    return;  // no pod, or a launcher in it started this process
  }
  long per_node = 1;
  const std::string& text = pod->nproc_per_node;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), per_node);
  const bool several = ec == std::errc() && end == text.data() + text.size() && per_node > 1;
  DTRAIN_CHECK(!several, "PET_NPROC_PER_NODE=", text, " asks for ", text,
               " processes in this pod, but it was started without a launcher, so RANK is the "
               "pod's rank among the nodes: make the pod's command `dtrun <program>` (dtrun reads "
               "PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and "
               "PET_MASTER_PORT as torchrun does), or set nprocPerNode to 1");
}

void check_one_launcher_per_node(const EnvLookup& env, int nnodes_min, int nnodes_max) {
  const std::optional<long> tasks = number(env, "SLURM_STEP_NUM_TASKS");
  const std::optional<long> nodes = number(env, "SLURM_STEP_NUM_NODES");
  if (!tasks || !nodes || !env("SLURM_STEP_ID")) {
    return;  // not in a step that srun started
  }
  DTRAIN_CHECK(*tasks == *nodes, "dtrun runs once per node and starts its --nproc-per-node ",
               "processes itself, but this srun step has ", *tasks, " tasks on ", *nodes,
               " node(s) (SLURM_STEP_NUM_TASKS=", *tasks, ", SLURM_STEP_NUM_NODES=", *nodes,
               "): start it with `srun --ntasks-per-node=1 dtrun ...`");
  DTRAIN_CHECK(*nodes >= nnodes_min && *nodes <= nnodes_max, "dtrun --nnodes ", nnodes_min,
               nnodes_min == nnodes_max ? "" : ":" + std::to_string(nnodes_max),
               " disagrees with this srun step's ", *nodes,
               " node(s) (SLURM_STEP_NUM_NODES): pass --nnodes \"$SLURM_JOB_NUM_NODES\"");
}

}  // namespace dtrain::util
