#include "training_job.h"

#include <chrono>

#include <ATen/ATen.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/memory.h"

namespace dtrain::apps {

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

Job start_job(const util::LaunchEnv& env, const std::string& backend, int timeout_s) {
  if (env.world_size.value_or(1) <= 1) {
    util::retain_freed_host_memory();  // init_process_group's default, alone
    return {};
  }
  dist::init_process_group({.backend = backend, .timeout = std::chrono::seconds(timeout_s)});
  return {dist::get_rank(), dist::get_world_size()};
}

void finish_job(const Job& job) {
  if (job.distributed()) {
    dist::destroy_process_group();
  }
}

}  // namespace dtrain::apps
