// NCCL and CUDA checks and the mappings of dtrain's types onto NCCL's, for
// the NCCL backend. Internal: only built with CUDA.
//
//   DTRAIN_NCCL_CHECK(ncclAllReduce(...), rank, describe("all_reduce"));
//
// throws NcclError (NcclUsageError for ncclInvalidArgument/ncclInvalidUsage,
// NcclRemoteError for ncclRemoteError) whose message names the context, the
// expression, the file, the line, the rank and NCCL's own explanation.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <ATen/core/Tensor.h>

#include <string>

#include "dtrain/dist/process_group_nccl.h"
#include "dtrain/dist/types.h"

namespace dtrain::dist::nccl {

// "ncclInvalidArgument" for ncclInvalidArgument, "ncclResult 42" for unknown codes.
std::string result_name(ncclResult_t result);

// What to do about an NCCL failure whose last error NCCL reported as
// `nccl_says`, or "" when dtrain has no advice: several ranks of one host
// on one GPU, which NCCL refuses, say how to run them.
std::string advice_for(const std::string& nccl_says);

[[noreturn]] void throw_nccl_error(ncclResult_t result, const char* expression, const char* file,
                                   int line, int rank, const std::string& context);
[[noreturn]] void throw_cuda_error(cudaError_t result, const char* expression, const char* file,
                                   int line, int rank, const std::string& context);

// float32, float64, float16, bfloat16, int32, int64, uint8; anything else
// raises dtrain::Error naming the dtype.
ncclDataType_t to_nccl(at::ScalarType type);
ncclRedOp_t to_nccl(ReduceOp op);

}  // namespace dtrain::dist::nccl

// Throws through `throw_error` unless `expr`, of type `type`, is `success`.
#define DTRAIN_DIST_CHECK_CALL(type, success, throw_error, expr, text, rank, context) \
  do {                                                                                \
    const type dtrain_call_result_ = (expr);                                          \
    if (dtrain_call_result_ != (success)) [[unlikely]] {                              \
      throw_error(dtrain_call_result_, text, __FILE__, __LINE__, (rank), (context));  \
    }                                                                                 \
  } while (false)

#define DTRAIN_NCCL_CHECK(expr, rank, context)                                              \
  DTRAIN_DIST_CHECK_CALL(ncclResult_t, ncclSuccess, ::dtrain::dist::nccl::throw_nccl_error, \
                         (expr), #expr, rank, context)

#define DTRAIN_CUDA_CHECK(expr, rank, context)                                                     \
  DTRAIN_DIST_CHECK_CALL(cudaError_t, cudaSuccess, ::dtrain::dist::nccl::throw_cuda_error, (expr), \
                         #expr, rank, context)
