// ProcessGroupNCCL: collectives on CUDA tensors over our own NCCL
// communicators (ncclComm_t). Compiled only when dtrain is built with CUDA
// (dtrain/config.h: DTRAIN_WITH_CUDA); init_process_group with backend
// "nccl" raises otherwise.
//
// Contract:
// - One communicator per group, on one device: made on the first operation
//   for the device of its tensor (or in the constructor when
//   NcclOptions::device >= 0). Rank 0 makes the ncclUniqueId and puts it in
//   the store (key "nccl/<group>/unique_id"); the others get() it. Every rank
//   must use one device per group; a tensor on another device raises.
// - Streams: each communicator runs on its own CUDA stream. An operation
//   first waits (on the GPU) for the work already queued on the caller's
//   current stream, and the returned Work records an end event. Work::wait()
//   makes the caller's current stream wait for that event and returns at
//   once -- it blocks the host only with a non-zero timeout, with
//   NcclOptions::blocking_wait, or for barrier(), which blocks until every
//   rank arrived.
// - CPU tensors: broadcast, all_reduce, reduce and all_gather also take
//   tensors on the CPU, staged through the group's GPU (Note [CPU tensors
//   on an NCCL group]); such a call returns when it has finished. The other
//   operations take CUDA tensors only.
// - Errors: tensors on the CPU where they are not staged, of an
//   unsupported dtype or of mismatching shapes raise dtrain::Error at the
//   call. A watchdog thread per group
//   polls the communicator for asynchronous errors and the end events for
//   deadlines; when a collective passes its timeout, it aborts the
//   communicator (ncclCommAbort) and fails the Work with
//   CollectiveTimeoutError naming the op, the group and the rank, so the
//   process fails instead of hanging. Failed NCCL calls raise NcclError
//   (or a subclass) naming the call, the file, the line and the rank.
// - Point-to-point: NCCL has no tags; sends and recvs between two ranks
//   match in issue order. A rank cannot send to itself.
// Thread-safe: operations may be issued from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/dist/process_group.h"
#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

// An NCCL call failed; code() is its ncclResult_t.
class NcclError : public CollectiveError {
 public:
  NcclError(const std::string& message, int code) : CollectiveError(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// ncclInvalidArgument / ncclInvalidUsage: the call was wrong (a bug in the caller).
class NcclUsageError : public NcclError {
 public:
  using NcclError::NcclError;
};

// ncclRemoteError: a peer failed or went away.
class NcclRemoteError : public NcclError {
 public:
  using NcclError::NcclError;
};

struct NcclOptions {
  // How long a collective may run before the watchdog aborts the communicator.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // >= 0: create the communicator on cuda:<device> in the constructor
  // (every rank of the group then takes part at once); -1: on first use.
  int device = -1;
  // Work::wait() blocks the host until the operation finished (or failed).
  bool blocking_wait = false;
  // How often the watchdog polls while operations are in flight.
  std::chrono::milliseconds poll_interval{1};
  // Options from the environment: DTRAIN_NCCL_BLOCKING_WAIT=1.
  static NcclOptions from_env();
};

class ProcessGroupNCCL : public ProcessGroup {
 public:
  // Does not block unless options.device >= 0 (then it waits for every rank
  // to create the communicator, up to options.timeout for the id).
  ProcessGroupNCCL(std::shared_ptr<Store> store, int rank, int size,
                   NcclOptions options = NcclOptions::from_env(), std::string name = "default");
  // Waits for operations in flight (the watchdog still enforces their
  // timeouts), then destroys the communicator. Logs errors, never throws.
  ~ProcessGroupNCCL() override;

  std::string backend_name() const override { return "nccl"; }

  // NCCL_VERSION_CODE of nccl.h at build time, and ncclGetVersion() of the
  // libnccl.so.2 loaded in this process (see docs/libtorch.md).
  static int compiled_version();
  static int runtime_version();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::dist
