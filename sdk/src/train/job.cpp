#include "dtrain/train/job.h"

#include <chrono>

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <spdlog/spdlog.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/job_rank.h"
#include "dtrain/util/memory.h"
#include "dtrain/util/process_setup.h"

namespace dtrain::train {

std::vector<double> Job::sum(std::vector<double> values) const {
  if (distributed()) {
    at::Tensor t = at::tensor(values, at::kDouble);
    dist::all_reduce(t);
    values.assign(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  return values;
}

std::vector<double> Job::each(double value) const {
  std::vector<double> slots(static_cast<size_t>(world), 0.0);
  slots[static_cast<size_t>(rank)] = value;
  return sum(std::move(slots));
}

void set_up_training_process() {
  util::set_up_process(util::ProcessSetup().retain_freed_host_memory(false));
  try {
    const util::LaunchEnv env = util::read_launch_env();
    if (env.world_size.value_or(1) > 1) {
      util::set_job_rank(env.rank);
    }
  } catch (const Error&) {
    // read_launch_env's error names the variable; the run reports it.
  }
}

util::LaunchEnv launch_env(const JoinOptions& join) {
  util::LaunchEnv env = util::read_launch_env();
  if (join.world_size() > 0) {
    env.world_size = join.world_size();
    env.rank = join.rank();
    env.source = "flags";
  }
  if (env.world_size.value_or(1) > 1) {
    util::set_job_rank(env.rank);
  }
  return env;
}

// Made current so that NCCL and the caching allocator use it.
c10::Device choose_device(const util::LaunchEnv& env, Device device) {
  if (device == Device::kCpu) {
    return c10::kCPU;
  }
  const auto visible = at::hasCUDA() ? static_cast<int64_t>(at::getNumGPUs()) : 0;
  DTRAIN_CHECK(
      visible > 0,
      "--device cuda: no CUDA device is visible (none installed, CUDA_VISIBLE_DEVICES "
      "hides them, or LibTorch was built without CUDA); train with --device cpu, or run where "
      "nvidia-smi lists a GPU");
  // A process that sees one GPU uses it, whatever its local rank: Slurm's
  // --gpus-per-task=1 and per-process CUDA_VISIBLE_DEVICES show each rank
  // its own GPU as device 0. Ranks that share a GPU (dtrun --share-gpu)
  // all take device 0.
  const int64_t local_rank = env.local_rank.value_or(0);
  const bool first_device = visible == 1 || env.share_gpu;
  DTRAIN_CHECK(first_device || local_rank < visible, "--device cuda: this process has local rank ",
               local_rank, " but only ", visible,
               " CUDA device(s) are visible: start at most that many processes per node, or "
               "share one GPU with dtrun --share-gpu");
  const auto index = static_cast<c10::DeviceIndex>(first_device ? 0 : local_rank);
  at::accelerator::setDeviceIndex(index);
  return {c10::kCUDA, index};
}

Job start_job(const util::LaunchEnv& env, const JoinOptions& join, Backend backend, int timeout_s,
              c10::Device device) {
  Job job;
  job.device = device;
  // Note [Freed host memory stays with the process], from the first
  // training step on: the data is loaded by now.
  util::retain_freed_host_memory();
  if (env.world_size.value_or(1) <= 1) {
    return job;
  }
  // "auto" follows the training device, not whether the machine has a GPU:
  // CPU training on a GPU node still needs Gloo.
  const Backend chosen = backend != Backend::kAuto
                             ? backend
                             : (job.device.is_cuda() ? Backend::kNccl : Backend::kGloo);
  // Without --world-size, rank and world come from the launcher's
  // variables, read where init_process_group reads them (under mpirun it
  // also shares the store's address through MPI).
  const bool by_hand = join.world_size() > 0;
  dist::init_process_group({.backend = backend_words().word(chosen),
                            .init_method = join.init_method(),
                            .rank = by_hand ? join.rank() : -1,
                            .world_size = by_hand ? join.world_size() : -1,
                            .timeout = std::chrono::seconds(timeout_s)});
  job.rank = dist::get_rank();
  job.world = dist::get_world_size();
  if (chosen == Backend::kGloo && job.device.is_cuda()) {
    spdlog::info(
        "gloo copies each bucket of gradients from {} to the host and back; nccl keeps "
        "them on the GPU and is faster where it works",
        job.device.str());
  }
  return job;
}

void finish_job(const Job& job) {
  if (job.distributed()) {
    dist::destroy_process_group();
  }
}

}  // namespace dtrain::train
