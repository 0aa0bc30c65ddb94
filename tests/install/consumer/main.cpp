// Uses a model, a kernel and the logger of an installed dtrain (set up as a
// program opts in, util::set_up_process); launched with several processes
// (the install test runs it under the installed dtrun), also the process
// group (Gloo, so the installed Gloo module) and DistributedDataParallel.
#include <cstdio>

#include <dtrain/config.h>
#include <dtrain/ddp/distributed_data_parallel.h>
#include <dtrain/dist/init.h>
#include <dtrain/kernels/metrics.h>
#include <dtrain/models/toy_cnn.h>
#include <dtrain/util/launch_env.h>
#include <dtrain/util/logging.h>
#include <dtrain/util/process_setup.h>

namespace {

// One DDP step on two ranks: afterwards every rank's gradient is the same
// average, which an all-reduce of its max and min confirms.
int data_parallel_step() {
  dtrain::dist::init_process_group({.backend = "gloo"});
  const int rank = dtrain::dist::get_rank();
  torch::manual_seed(rank);  // different data, different local gradients
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  dtrain::ddp::DistributedDataParallel<dtrain::models::ToyCnn> ddp(model);
  ddp(torch::randn({2, 1, 32, 32})).sum().backward();
  const torch::Tensor grad = model->parameters()[0].grad().flatten();
  torch::Tensor high = grad.clone();
  torch::Tensor low = grad.clone();
  dtrain::dist::all_reduce(high, dtrain::dist::ReduceOp::kMax);
  dtrain::dist::all_reduce(low, dtrain::dist::ReduceOp::kMin);
  const bool same = torch::equal(high, low);
  std::printf("consumer ddp %s: rank %d of %d\n", same ? "ok" : "FAILED", rank,
              dtrain::dist::get_world_size());
  dtrain::dist::destroy_process_group();
  return same ? 0 : 1;
}

}  // namespace

int main() {
  dtrain::util::set_up_process();
  if (dtrain::util::read_launch_env().world_size.value_or(1) > 1) {
    return data_parallel_step();
  }
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  const torch::Tensor logits = model(torch::randn({4, 1, 32, 32}));
  // Labels equal to the predictions: every row must count as correct.
  const int64_t correct = dtrain::kernels::count_correct(logits, logits.argmax(1)).item<int64_t>();
  spdlog::info("consumer logits {}x{}", logits.size(0), logits.size(1));
  std::printf("consumer ok: dtrain %s, %lld/4 predictions counted\n", DTRAIN_VERSION_STRING,
              static_cast<long long>(correct));
  return correct == 4 ? 0 : 1;
}
