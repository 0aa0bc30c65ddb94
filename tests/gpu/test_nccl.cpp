// The NCCL backend on one GPU (world size 1: NCCL refuses two ranks on one
// device): every op, reduce op and dtype on CUDA tensors, CPU tensors staged
// through the GPU, DDP over NCCL, stream ordering, and the watchdog's
// timeout. Skips without a visible CUDA device.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <thread>

#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/dist/init.h"
#include "dtrain/dist/process_group_nccl.h"
#include "multi_process.h"
#include "one_rank_group.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dist::ReduceOp;

const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                             at::kInt,   at::kLong,   at::kByte};

class Nccl : public dtrain::testing::OneRankCudaGroup {
 protected:
  Nccl() : OneRankCudaGroup("nccl") {}
};

TEST_F(Nccl, Versions) {
  std::printf("NCCL compiled against %d, loaded %d\n", dist::ProcessGroupNCCL::compiled_version(),
              dist::ProcessGroupNCCL::runtime_version());
  EXPECT_EQ(dist::ProcessGroupNCCL::runtime_version() / 10000,
            dist::ProcessGroupNCCL::compiled_version() / 10000);
}

TEST_F(Nccl, AllReduceEveryOpAndDtype) {
  for (auto dtype : kDtypes) {
    std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
                                 ReduceOp::kMax};
    if (at::isFloatingType(dtype)) {
      ops.push_back(ReduceOp::kAvg);
    }
    for (auto op : ops) {
      at::Tensor t = at::arange(7, cuda(dtype));
      dist::all_reduce(t, op);
      EXPECT_TRUE(at::equal(t.cpu(), at::arange(7, at::TensorOptions().dtype(dtype))))
          << dtype << " " << dist::to_string(op) << ": " << t;
      at::Tensor r = at::arange(5, cuda(dtype)) + 1;
      dist::reduce(r, 0, op);
      EXPECT_TRUE(at::equal(r.cpu(), at::arange(5, at::TensorOptions().dtype(dtype)) + 1))
          << "reduce " << dtype << " " << dist::to_string(op);
    }
  }
}

TEST_F(Nccl, EveryOtherOp) {
  for (auto dtype : kDtypes) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto expected = at::arange(6, at::TensorOptions().dtype(dtype)).view({2, 3});
    at::Tensor b = at::arange(6, cuda(dtype)).view({2, 3});
    dist::broadcast(b, 0);
    EXPECT_TRUE(at::equal(b.cpu(), expected));

    std::vector<at::Tensor> gathered = {at::zeros({2, 3}, cuda(dtype))};
    dist::all_gather(gathered, b);
    EXPECT_TRUE(at::equal(gathered[0].cpu(), expected));

    std::vector<at::Tensor> to_root = {at::zeros({2, 3}, cuda(dtype))};
    dist::gather(b, to_root, 0);
    EXPECT_TRUE(at::equal(to_root[0].cpu(), expected));

    at::Tensor scattered = at::zeros({2, 3}, cuda(dtype));
    dist::scatter(scattered, {b}, 0);
    EXPECT_TRUE(at::equal(scattered.cpu(), expected));

    at::Tensor reduced = at::zeros({2, 3}, cuda(dtype));
    dist::reduce_scatter(reduced, {b}, ReduceOp::kSum);
    EXPECT_TRUE(at::equal(reduced.cpu(), expected));

    std::vector<at::Tensor> received = {at::zeros({2, 3}, cuda(dtype))};
    dist::all_to_all(received, {b});
    EXPECT_TRUE(at::equal(received[0].cpu(), expected));
  }
  dist::barrier();
}

TEST_F(Nccl, NonContiguousTensorsAreWrittenBack) {
  at::Tensor base = at::arange(12, cuda(at::kFloat)).view({3, 4});
  at::Tensor column = base.t();  // not contiguous
  dist::all_reduce(column, ReduceOp::kMax);
  EXPECT_TRUE(at::equal(base.cpu(), at::arange(12, at::kFloat).view({3, 4})));
  std::vector<at::Tensor> outs = {at::zeros({4, 3}, cuda(at::kFloat)).t().t()};
  dist::all_gather(outs, base.t());
  EXPECT_TRUE(at::equal(outs[0].cpu(), base.t().cpu()));
}

TEST_F(Nccl, WaitOrdersTheCallersStreamWithoutBlocking) {
  auto stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  at::Tensor t = at::zeros({1 << 20}, cuda(at::kFloat));
  t.fill_(2);  // queued on `stream`; the collective must see it
  auto work = dist::all_reduce(t, ReduceOp::kSum, nullptr, /*async_op=*/true);
  work->wait();  // stream-side
  t.mul_(3);     // after the all_reduce on `stream`
  stream.synchronize();
  EXPECT_EQ(t.sum().item<double>(), 6.0 * (1 << 20));
  for (int i = 0; i < 200 && !work->is_completed(); ++i) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(work->exception(), nullptr);
}

// Note [Tensors on a device the backend does not move]: the control messages of a job stay
// CPU tensors; the results come back into them, and the call returns done.
TEST_F(Nccl, CpuTensorsAreStagedThroughTheGpu) {
  at::Tensor sum = at::arange(5, at::kLong);
  auto work = dist::all_reduce(sum, ReduceOp::kSum, nullptr, /*async_op=*/true);
  EXPECT_TRUE(work->is_completed());
  work->wait();
  EXPECT_TRUE(sum.device().is_cpu());
  EXPECT_TRUE(at::equal(sum, at::arange(5, at::kLong)));
  at::Tensor value = at::full({3}, 7.0);
  dist::broadcast(value, 0);
  dist::reduce(value, 0, ReduceOp::kMax);
  EXPECT_TRUE(at::equal(value, at::full({3}, 7.0)));
  // The gathered values really come back: the output starts out otherwise.
  std::vector<at::Tensor> gathered = {at::full({2}, -1, at::kLong)};
  dist::all_gather(gathered, at::tensor({4, 2}, at::kLong));
  EXPECT_TRUE(gathered[0].device().is_cpu());
  EXPECT_TRUE(at::equal(gathered[0], at::tensor({4, 2}, at::kLong)));
  // Ops that are not staged still say what they take.
  at::Tensor cpu = at::ones({4});
  EXPECT_THROW(dist::send(cpu, 0), dtrain::Error);
}

// DDP over NCCL with the model on the GPU: its CPU control messages (the
// parameter-shape check, the bucket order) pass through the GPU, and the
// steps train.
TEST_F(Nccl, DdpTrainsACudaModel) {
  dtrain::testing::expect_ddp_trains_a_cuda_model();
}

TEST_F(Nccl, RejectsWhatNcclCannotDo) {
  at::Tensor t = at::ones({4}, cuda(at::kFloat));
  EXPECT_THROW(dist::send(t, 0), dtrain::Error);  // to itself
  at::Tensor b = at::ones({4}, cuda(at::kBool));
  EXPECT_THROW(dist::all_reduce(b), dtrain::Error);
  at::Tensor i = at::ones({4}, cuda(at::kInt));
  EXPECT_THROW(dist::all_reduce(i, ReduceOp::kAvg), dtrain::Error);
}

// A collective stuck behind a long kernel on the caller's stream passes its
// timeout: the watchdog aborts the communicator and the Work fails, naming
// the op, the group and the rank.
TEST(NcclTimeout, WatchdogAbortsAndNamesTheCollective) {
  if (!at::hasCUDA()) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  auto store_port = dtrain::testing::free_port();
  dist::init_process_group({.backend = "nccl",
                            .init_method = "tcp://127.0.0.1:" + std::to_string(store_port),
                            .rank = 0,
                            .world_size = 1,
                            .timeout = 300ms});
  at::Tensor t = at::ones({4}, at::TensorOptions().device(at::kCUDA, 0));
  dist::all_reduce(t);                                // creates the communicator in time
  at::cuda::sleep(int64_t{20} * 1000 * 1000 * 1000);  // ~10 s of spinning on the current stream
  const auto start = std::chrono::steady_clock::now();
  auto work = dist::all_reduce(t, ReduceOp::kSum, nullptr, /*async_op=*/true);
  try {
    work->wait(5s);
    ADD_FAILURE() << "the collective finished behind a 10 s kernel with a 300 ms timeout";
  } catch (const dist::CollectiveTimeoutError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("all_reduce(SUM) on group 'default' (nccl), rank 0 of 1"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("not finished after 300 ms"), std::string::npos) << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_THROW(dist::all_reduce(t), dist::CollectiveError);  // the communicator is gone
  dist::destroy_process_group();
}

}  // namespace
