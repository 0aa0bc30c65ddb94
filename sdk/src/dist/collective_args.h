// Checks and tensor plumbing that every backend's collectives share. Each
// check throws dtrain::Error prefixed with `what` (the op, group and rank,
// from ProcessGroup::describe), naming the bad value and what was expected.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/dist/types.h"
#include "dtrain/dist/work.h"
#include "dtrain/util/errors.h"

namespace dtrain::dist::detail {

// The dtypes every backend moves, in the order of the backends' tables
// (by_dtype) and of the names in their errors.
inline constexpr std::array<at::ScalarType, 7> kDtypes = {
    at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong, at::kByte};
// "float32", "bfloat16", "uint8", ...: a dtype as errors and desync reports
// name it (c10's name for a dtype outside kDtypes).
std::string dtype_name(at::ScalarType type);
// The position of `type` in kDtypes; throws dtrain::Error "<backend> supports
// float32, float64, float16, bfloat16, int32, int64 and uint8 tensors, got
// Bool" for any other.
std::size_t dtype_index(at::ScalarType type, const std::string& backend);
// A backend's own name for `type`, from its table in kDtypes' order.
template <typename T>
T by_dtype(at::ScalarType type, const std::array<T, kDtypes.size()>& table,
           const std::string& backend) {
  return table[dtype_index(type, backend)];
}
// A backend's own name for `op`, from its table in ReduceOp's order: SUM,
// PRODUCT, MIN, MAX, AVG.
template <typename T>
T by_op(ReduceOp op, const std::array<T, 5>& table) {
  const auto index = static_cast<std::size_t>(op);
  DTRAIN_CHECK(index < table.size(), "unknown ReduceOp ", index);
  return table[index];
}

// b matches a's shape and dtype (and is defined).
void check_same(const at::Tensor& a, const at::Tensor& b, const std::string& what);
// A list holds exactly one tensor per rank.
void check_count(const std::vector<at::Tensor>& list, int size, const std::string& what,
                 const char* name);
// A list holds exactly one tensor per rank, each matching `like`.
void check_one_per_rank(const std::vector<at::Tensor>& list, const at::Tensor& like, int size,
                        const std::string& what, const char* name);
void check_root(int root, int size, const std::string& what);
// A point-to-point peer is another rank of the group.
void check_peer(int peer, int rank, int size, const std::string& what);
// AVG divides, so it needs a floating-point tensor.
void check_avg(ReduceOp op, const at::Tensor& tensor, const std::string& what);

// Note [Tensors on a device the backend does not move]
// NCCL moves GPU memory and Gloo host memory, yet both are handed the
// other kind: the small CPU control tensors of a training job on an NCCL
// group (DDP's checks, samplers' agreement, metric sums), and a CUDA model
// on a Gloo group, which torch.distributed's Gloo takes for its common
// collectives. Rather than make every caller pick its device by backend,
// the group stages such tensors through its own device: copy there, run
// the collective, wait, copy back. The call returns finished, even when
// asked for async work; large tensors pay two copies and a wait.
//
// staged_on: `run` on copies of `inputs` and `outputs` made on `device`;
// waits for its work, then copies the staged outputs back into `outputs`.
// Every tensor must be on `from` (else an error naming `what`: one device
// per call). Returns finished Work.
using StagedRun =
    std::function<WorkPtr(std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs)>;
// Pointers to each of `tensors`, for staged_on's outputs.
std::vector<at::Tensor*> pointers_to(std::vector<at::Tensor>& tensors);
WorkPtr staged_on(const c10::Device& device, c10::DeviceType from, const std::string& what,
                  const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor*>& outputs,
                  const StagedRun& run);

// Runs body on a contiguous tensor with tensor's contents, copying the
// result back when tensor was not contiguous.
void on_contiguous(at::Tensor& tensor, c10::function_ref<void(at::Tensor&)> body);
// The tensors flattened and concatenated, in order.
at::Tensor flat_cat(const std::vector<at::Tensor>& tensors);
// Copies consecutive blocks of flat into outputs, each reshaped to its output.
void split_into(const at::Tensor& flat, std::vector<at::Tensor>& outputs);

}  // namespace dtrain::dist::detail
