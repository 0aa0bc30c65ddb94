// Note [Tensors on a device the backend does not move]: the staging that
// lets an NCCL group take CPU tensors and a Gloo group CUDA ones. Here on
// the CPU alone (tests/gpu runs the two backends through it): the outputs
// get the staged results only once the work succeeded, and a call that
// mixes devices is refused by name.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <stdexcept>

#include "dist/collective_args.h"
#include "expect_error.h"

namespace {

namespace dist = dtrain::dist;
using dist::detail::staged_on;
using dtrain::testing::expect_error;

TEST(StagedOn, OutputsTakeTheStagedResultsOnceTheWorkSucceeded) {
  const at::Tensor input = at::arange(3, at::kFloat);
  at::Tensor first = at::zeros({3});
  at::Tensor second = at::zeros({2, 3}).t();  // not contiguous
  auto work = staged_on(c10::Device(c10::kCPU), c10::kCPU, "op", {input}, {&first, &second},
                        [&](std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) {
                          EXPECT_TRUE(at::equal(in[0], input));
                          EXPECT_EQ(out.size(), 2u);
                          out[0].copy_(in[0] * 2);
                          out[1].fill_(7);
                          auto done = std::make_shared<dist::Work>("op");
                          done->finish();
                          return done;
                        });
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(work->exception(), nullptr);
  EXPECT_TRUE(at::equal(first, at::arange(3, at::kFloat) * 2));
  EXPECT_TRUE(at::equal(second, at::full({3, 2}, 7.0)));
}

TEST(StagedOn, AFailedCollectiveRaisesAndLeavesTheOutputsAlone) {
  at::Tensor output = at::ones({4});
  // Staged on another device than the tensors' own, so the run writes a copy.
  const c10::Device meta(c10::kMeta);
  expect_error<std::runtime_error>(
      [&] {
        staged_on(meta, c10::kCPU, "all_reduce(SUM) on group 'g'", {}, {&output},
                  [&](std::vector<at::Tensor>&, std::vector<at::Tensor>& out) {
                    EXPECT_TRUE(out[0].is_meta());
                    auto failed = std::make_shared<dist::Work>("all_reduce");
                    failed->finish(std::make_exception_ptr(std::runtime_error("peer 1 is gone")));
                    return failed;
                  });
      },
      "peer 1 is gone");
  EXPECT_TRUE(at::equal(output, at::ones({4})));
}

TEST(StagedOn, OneDevicePerCall) {
  at::Tensor cpu = at::ones({2});
  expect_error(
      [&] {
        staged_on(c10::Device(c10::kCPU), c10::kCUDA, "all_gather on group 'g' (gloo)", {cpu}, {},
                  [](auto&, auto&) -> dist::WorkPtr {
                    ADD_FAILURE() << "ran with a tensor on the wrong device";
                    return nullptr;
                  });
      },
      "all_gather on group 'g' (gloo): mixes CUDA and CPU tensors; use one device per call");
}

}  // namespace
