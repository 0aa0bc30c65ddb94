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
