#include "nccl_utils.h"

#include <c10/util/Exception.h>

#include "collective_args.h"

namespace dtrain::dist::nccl {

std::string result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult " + std::to_string(static_cast<int>(result));
  }
}

std::string advice_for(const std::string& nccl_says) {
  if (nccl_says.find("Duplicate GPU detected") != std::string::npos) {
    return "several ranks of this host are on one GPU, which NCCL refuses: give each rank its "
           "own GPU (dtrun --bind-devices, or one per LOCAL_RANK), or, to check multi-rank code "
           "on one GPU, start them with dtrun --share-gpu (DTRAIN_SHARE_GPU=1 under another "
           "launcher), which makes each rank its own NCCL host";
  }
  return "";
}

void throw_nccl_error(ncclResult_t result, const char* expression, const char* file, int line,
                      int rank, const std::string& context) {
  std::string message = (context.empty() ? std::string() : context + ": ") + "NCCL call `" +
                        expression + "` failed on rank " + std::to_string(rank) + " at " + file +
                        ":" + std::to_string(line) + ": " + result_name(result) + " (" +
                        ncclGetErrorString(result) + ")";
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') {
    message += "; NCCL says: ";
    message += last;
    if (const std::string advice = advice_for(last); !advice.empty()) {
      message += "; " + advice;
    }
  }
  message += " (NCCL_DEBUG=WARN prints more)";
  const int code = static_cast<int>(result);
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      throw NcclUsageError(message, code);
    case ncclRemoteError:
      throw NcclRemoteError(message, code);
    default:
      throw NcclError(message, code);
  }
}

void throw_cuda_error(cudaError_t result, const char* expression, const char* file, int line,
                      int rank, const std::string& context) {
  throw CollectiveError((context.empty() ? std::string() : context + ": ") + "CUDA call `" +
                        expression + "` failed on rank " + std::to_string(rank) + " at " + file +
                        ":" + std::to_string(line) + ": " + cudaGetErrorName(result) + " (" +
                        cudaGetErrorString(result) + ")");
}

ncclDataType_t to_nccl(at::ScalarType type) {
  return detail::by_dtype<ncclDataType_t>(
      type, {ncclFloat32, ncclFloat64, ncclFloat16, ncclBfloat16, ncclInt32, ncclInt64, ncclUint8},
      "nccl");
}

ncclRedOp_t to_nccl(ReduceOp op) {
  return detail::by_op<ncclRedOp_t>(op, {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg});
}

}  // namespace dtrain::dist::nccl
