// CUDA tensors on a Gloo group, as torch.distributed's Gloo takes them for
// its common collectives: broadcast, all_reduce, reduce and all_gather stage
// them through the host (Note [Tensors on a device the backend does not
// move]), DDP trains a CUDA model over Gloo, and the other ops refuse CUDA
// tensors by name. World size 1, in this process. Skips without a visible
// CUDA device.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "dtrain/dist/init.h"
#include "expect_error.h"
#include "one_rank_group.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;

class GlooCuda : public dtrain::testing::OneRankCudaGroup {
 protected:
  GlooCuda() : OneRankCudaGroup("gloo") {}
  const at::TensorOptions cuda_ = cuda();
};

TEST_F(GlooCuda, CommonCollectivesStageThroughTheHost) {
  at::Tensor t = at::arange(6, cuda_.dtype(at::kFloat)).view({2, 3}).t();  // not contiguous
  const at::Tensor expected = t.clone();
  dist::all_reduce(t, dist::ReduceOp::kMax);
  dist::broadcast(t, 0);
  dist::reduce(t, 0);
  EXPECT_TRUE(t.is_cuda());
  EXPECT_TRUE(at::equal(t, expected));
  std::vector<at::Tensor> gathered = {at::zeros({3, 2}, cuda_)};
  dist::all_gather(gathered, t);
  EXPECT_TRUE(gathered[0].is_cuda());
  EXPECT_TRUE(at::equal(gathered[0], expected));
  // async_op: the staged call has finished when it returns.
  auto work = dist::all_reduce(t, dist::ReduceOp::kSum, nullptr, /*async_op=*/true);
  EXPECT_TRUE(work->is_completed());
}

TEST_F(GlooCuda, OtherOpsAndMixedDevicesAreRefusedByName) {
  at::Tensor t = at::ones({4}, cuda_);
  std::vector<at::Tensor> gathered = {at::zeros({4}, cuda_)};
  dtrain::testing::expect_error([&] { dist::gather(t, gathered, 0); },
                                "gloo takes CPU tensors, got one on cuda:0 (gloo stages CUDA "
                                "tensors through the host for broadcast, all_reduce, reduce "
                                "and all_gather only");
  std::vector<at::Tensor> on_cpu = {at::zeros({4})};
  dtrain::testing::expect_error([&] { dist::all_gather(on_cpu, t); },
                                "mixes CUDA and CPU tensors; use one device per call");
}

TEST_F(GlooCuda, DdpTrainsACudaModel) {
  dtrain::testing::expect_ddp_trains_a_cuda_model();
}

}  // namespace
