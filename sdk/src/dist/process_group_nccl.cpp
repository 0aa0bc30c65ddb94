// ProcessGroupNCCL: the NCCL transport under the ProcessGroup front end
// (transport.h): creates the group's communicator on first use, launches
// each operation on the communicator's stream after the caller's stream,
// and lets a watchdog thread finish (or time out) the Work.
//
// Note [NCCL stream ordering]
// An operation must see what the caller queued on its current stream
// before the call, and the caller must not touch the tensors before the
// operation is done. So: record `ready` on the caller's stream and make the
// NCCL stream wait for it (GPU-side, the host goes on); run the NCCL calls
// and any copies they need on the NCCL stream; record the Work's end event
// there. Work::wait() makes the caller's stream wait for the end event. The
// caching allocator is told (recordStream) that the tensors are in use on
// the NCCL stream, so freeing them early cannot hand their memory to
// someone else while NCCL still writes it.
#include "dtrain/dist/process_group_nccl.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "dtrain/dist/store_names.h"
#include "dtrain/util/launch_env.h"
#include "nccl_utils.h"
#include "transport.h"
#include "work_watchdog.h"

namespace dtrain::dist {

// The transport interface (transport.h) and what the backends share.
using namespace detail;

namespace {

// A communicator and its stream; shared by the group and its Works.
struct Communicator {
  ncclComm_t comm = nullptr;
  int device = 0;
  c10::cuda::CUDAStream stream;
  cudaEvent_t ready = nullptr;  // recorded on the caller's stream before each op
  std::atomic<bool> aborted{false};
  std::mutex reason_mutex;
  std::string abort_reason;

  Communicator(int device_index, c10::cuda::CUDAStream s) : device(device_index), stream(s) {}
};

class NcclWork : public WatchedWork {
 public:
  NcclWork(OpContext ctx, std::shared_ptr<Communicator> comm, int rank, bool blocking,
           std::vector<at::Tensor> tensors)
      : WatchedWork(std::move(ctx)),
        comm_(std::move(comm)),
        rank_(rank),
        blocking_(blocking),
        tensors_(std::move(tensors)) {
    DTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&end_, cudaEventDisableTiming), rank_, description_);
  }

  ~NcclWork() override {
    if (end_ != nullptr) {
      c10::cuda::CUDAGuard guard(comm_->device);
      cudaEventDestroy(end_);
    }
  }

  void record_end() {
    DTRAIN_CUDA_CHECK(cudaEventRecord(end_, comm_->stream.stream()), rank_, description_);
  }

  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) override {
    if (blocking_ || timeout.count() > 0) {
      Work::wait(timeout);  // the watchdog finishes it, or fails it at its deadline
      return;
    }
    if (const auto error = exception()) {
      std::rethrow_exception(error);
    }
    // Note [NCCL stream ordering]: the caller's stream waits, the host does not.
    c10::cuda::CUDAGuard guard(comm_->device);
    DTRAIN_CUDA_CHECK(
        cudaStreamWaitEvent(c10::cuda::getCurrentCUDAStream(comm_->device).stream(), end_, 0),
        rank_, description_);
  }

  // Its end event: done, still running, or a failed stream.
  Progress poll(std::string& why) override {
    const cudaError_t state = cudaEventQuery(end_);
    if (state == cudaSuccess || state == cudaErrorNotReady) {
      return state == cudaSuccess ? Progress::kDone : Progress::kRunning;
    }
    why = std::string("the CUDA stream failed: ") + cudaGetErrorName(state) + " (" +
          cudaGetErrorString(state) + ")";
    return Progress::kFailed;
  }
  void release() override { tensors_.clear(); }

 private:
  std::shared_ptr<Communicator> comm_;
  int rank_;
  cudaEvent_t end_ = nullptr;
  bool blocking_;
  std::vector<at::Tensor> tensors_;  // alive until the GPU is done with them
};

}  // namespace

NcclOptions NcclOptions::from_env() {
  return {.blocking_wait = util::env_flag("DTRAIN_NCCL_BLOCKING_WAIT").value_or(false)};
}

int ProcessGroupNCCL::compiled_version() {
  return NCCL_VERSION_CODE;
}

int ProcessGroupNCCL::runtime_version() {
  int version = 0;
  DTRAIN_NCCL_CHECK(ncclGetVersion(&version), -1, "ProcessGroupNCCL::runtime_version");
  return version;
}

struct ProcessGroupNCCL::Impl : Transport, WatchdogHooks {
  Impl(ProcessGroupNCCL& self, const NcclOptions& options)
      : Transport({.device = c10::kCUDA,
                   .stages_from = c10::kCPU,
                   .takes = "nccl takes CUDA tensors here",
                   .advice = "CPU tensors are staged through the GPU only for broadcast, "
                             "all_reduce, reduce and all_gather; use the gloo backend for CPU work",
                   .reduces_avg = true,
                   .uneven_all_to_all = true,
                   .timeout = options.timeout}),
        self(self),
        options(options),
        watchdog(*this, "NCCL communicator", options.poll_interval) {}

  ProcessGroupNCCL& self;
  NcclOptions options;
  std::shared_ptr<Store> store;

  // The communicator; launches hold launch_mutex (an ncclComm_t is not thread-safe).
  std::mutex launch_mutex;
  std::shared_ptr<Communicator> comm;

  // Declared last: it stops first, while the communicator is still there.
  Watchdog watchdog;

  // The group's communicator on `device`, created on first use.
  std::shared_ptr<Communicator> communicator(int device, const std::string& what) {
    if (comm) {
      DTRAIN_CHECK(comm->device == device, what,
                   ": the group's NCCL communicator is on cuda:", comm->device,
                   ", got a tensor on cuda:", device, " (use one device per group and rank)");
      if (comm->aborted.load()) {
        std::lock_guard<std::mutex> lock(comm->reason_mutex);
        throw CollectiveError(what + ": the group's NCCL communicator was aborted earlier (" +
                              comm->abort_reason + ")");
      }
      return comm;
    }
    const int rank = self.rank();
    const std::string context = what + ": creating the NCCL communicator";
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    ncclUniqueId id;
    if (rank == 0) {
      DTRAIN_NCCL_CHECK(ncclGetUniqueId(&id), rank, context);
      store->set("unique_id", Bytes(reinterpret_cast<const std::uint8_t*>(&id),
                                    reinterpret_cast<const std::uint8_t*>(&id) + sizeof(id)));
    } else {
      Bytes value;
      try {
        store->wait({"unique_id"}, options.timeout);
        value = store->get("unique_id");
      } catch (const StoreTimeoutError& e) {
        throw CollectiveTimeoutError(context + ": rank 0 did not publish the NCCL id within " +
                                     std::to_string(options.timeout.count()) + " ms (" + e.what() +
                                     ")");
      } catch (const StoreError& e) {
        throw CollectiveError(context + ": could not read the NCCL id from the store (" + e.what() +
                              ")");
      }
      DTRAIN_CHECK_AS(CollectiveError, value.size() == sizeof(id), context,
                      ": the NCCL id in the store has ", value.size(), " bytes, expected ",
                      sizeof(id));
      std::memcpy(&id, value.data(), sizeof(id));
    }
    auto created = std::make_shared<Communicator>(
        device, c10::cuda::getStreamFromPool(/*isHighPriority=*/true,
                                             static_cast<c10::DeviceIndex>(device)));
    DTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&created->ready, cudaEventDisableTiming), rank,
                      context);
    DTRAIN_NCCL_CHECK(ncclCommInitRank(&created->comm, self.size(), id, rank), rank, context);
    comm = created;
    spdlog::debug("{}: NCCL communicator on cuda:{}", self.describe("nccl group"), device);
    return comm;
  }

  // Launches `body` on the communicator's stream (Note [NCCL stream ordering]).
  // `tensors` are the caller's tensors the operation reads or writes, on one
  // device. A blocking Work's wait() blocks the host.
  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor> tensors, bool blocking,
                 const std::function<void()>& body) {
    const int device = tensors.front().device().index();
    const int rank = self.rank();
    std::lock_guard<std::mutex> lock(launch_mutex);
    const auto c = communicator(device, ctx.what);
    c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
    const auto caller = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
    DTRAIN_CUDA_CHECK(cudaEventRecord(c->ready, caller.stream()), rank, ctx.what);
    DTRAIN_CUDA_CHECK(cudaStreamWaitEvent(c->stream.stream(), c->ready, 0), rank, ctx.what);
    for (const auto& t : tensors) {
      if (t.storage().data_ptr().get() != nullptr) {
        c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), c->stream);
      }
    }
    auto work = std::make_shared<NcclWork>(ctx, c, rank, blocking || options.blocking_wait,
                                           std::move(tensors));
    {
      // Copies and temporaries of `body` run on (and belong to) the NCCL stream.
      c10::cuda::CUDAStreamGuard stream_guard(c->stream);
      body();
    }
    work->record_end();
    watchdog.watch(work);
    return work;
  }

  // The front end's operations: AtIssue and InTurn both at the call, on the stream.
  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor> tensors,
                 const AtIssue& at_issue) override {
    return launch(ctx, std::move(tensors), false, [&] { at_issue()(ctx); });
  }

  // Marks the communicator aborted, so that new collectives fail at once;
  // true for the caller that marked it (and must call ncclCommAbort).
  bool mark_aborted(const std::string& reason) {
    const auto c = comm;  // set before any Work exists; never reset while the watchdog runs
    if (!c || c->aborted.exchange(true)) {
      return false;
    }
    std::lock_guard<std::mutex> lock(c->reason_mutex);
    c->abort_reason = reason;
    return true;
  }

  // Note [NCCL watchdog] (work_watchdog.h): what the group does for it.
  void before_first_poll() override {
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(comm->device));
  }
  std::optional<std::string> group_error() override {
    ncclResult_t error = ncclSuccess;
    if (comm->aborted.load() || ncclCommGetAsyncError(comm->comm, &error) != ncclSuccess ||
        error == ncclSuccess || error == ncclInProgress) {
      return std::nullopt;
    }
    return "NCCL reported an asynchronous error: " + nccl::result_name(error) + " (" +
           ncclGetErrorString(error) + ")";
  }
  std::string diagnose(const OpContext& ctx) override { return diagnose_timeout(store, self, ctx); }
  bool mark_broken(const std::string& failure) override { return mark_aborted(failure); }
  void abort() override { ncclCommAbort(comm->comm); }

  // CPU tensors on an NCCL group: Note [Tensors on a device the backend does
  // not move] (collective_args.h).
  c10::Device staging_device(const std::string& what) override {
    DTRAIN_CHECK(c10::cuda::device_count() > 0, what,
                 ": CPU tensors go through the group's GPU, but no CUDA device is visible");
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(group_device()));
  }

  // The device of the group's communicator, or the current one before it exists.
  int group_device() {
    std::lock_guard<std::mutex> lock(launch_mutex);
    return comm ? comm->device : static_cast<int>(c10::cuda::current_device());
  }

  // The transport's table: called in a launch, on the communicator's stream.
  cudaStream_t stream() const { return comm->stream.stream(); }
  static ncclDataType_t type(const at::Tensor& t) { return nccl::to_nccl(t.scalar_type()); }

  void broadcast(at::Tensor& data, int root, const OpContext& ctx) override {
    DTRAIN_NCCL_CHECK(ncclBroadcast(data.const_data_ptr(), data.mutable_data_ptr(), data.numel(),
                                    type(data), root, comm->comm, stream()),
                      self.rank(), ctx.what);
  }
  void all_reduce(at::Tensor& data, ReduceOp op, const OpContext& ctx) override {
    DTRAIN_NCCL_CHECK(ncclAllReduce(data.const_data_ptr(), data.mutable_data_ptr(), data.numel(),
                                    type(data), nccl::to_nccl(op), comm->comm, stream()),
                      self.rank(), ctx.what);
  }
  void reduce(at::Tensor& data, ReduceOp op, int root, const OpContext& ctx) override {
    DTRAIN_NCCL_CHECK(ncclReduce(data.const_data_ptr(), data.mutable_data_ptr(), data.numel(),
                                 type(data), nccl::to_nccl(op), root, comm->comm, stream()),
                      self.rank(), ctx.what);
  }
  void all_gather(const at::Tensor& in, at::Tensor& out, const OpContext& ctx) override {
    DTRAIN_NCCL_CHECK(ncclAllGather(in.const_data_ptr(), out.mutable_data_ptr(), in.numel(),
                                    type(in), comm->comm, stream()),
                      self.rank(), ctx.what);
  }
  void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op, const OpContext& ctx) override {
    DTRAIN_NCCL_CHECK(ncclReduceScatter(in.const_data_ptr(), out.mutable_data_ptr(), out.numel(),
                                        type(out), nccl::to_nccl(op), comm->comm, stream()),
                      self.rank(), ctx.what);
  }

  // One point-to-point transfer of `count` elements at `at` of `data`.
  void send_block(const at::Tensor& data, std::int64_t at, std::int64_t count, int peer,
                  const OpContext& ctx) {
    DTRAIN_NCCL_CHECK(ncclSend(data.narrow(0, at, count).const_data_ptr(), count, type(data), peer,
                               comm->comm, stream()),
                      self.rank(), ctx.what);
  }
  void recv_block(at::Tensor& data, std::int64_t at, std::int64_t count, int peer,
                  const OpContext& ctx) {
    DTRAIN_NCCL_CHECK(ncclRecv(data.narrow(0, at, count).mutable_data_ptr(), count, type(data),
                               peer, comm->comm, stream()),
                      self.rank(), ctx.what);
  }

  // `each` peer's transfers in one NCCL group, so that every pair's run together.
  void grouped(const OpContext& ctx, int skip, const std::function<void(int peer)>& each) {
    DTRAIN_NCCL_CHECK(ncclGroupStart(), self.rank(), ctx.what);
    for (int r = 0; r < self.size(); ++r) {
      if (r != skip) {
        each(r);
      }
    }
    DTRAIN_NCCL_CHECK(ncclGroupEnd(), self.rank(), ctx.what);
  }

  void all_to_all(const at::Tensor& in, at::Tensor& out, const BlockSizes& blocks,
                  const OpContext& ctx) override {
    std::int64_t in_at = 0;
    std::int64_t out_at = 0;
    grouped(ctx, /*skip=*/-1, [&](int r) {
      send_block(in, in_at, blocks.in[r], r, ctx);
      recv_block(out, out_at, blocks.out[r], r, ctx);
      in_at += blocks.in[r];
      out_at += blocks.out[r];
    });
  }
  // The root receives every other rank's block; its own is a copy.
  void gather(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    const auto n = in.numel();
    const at::Tensor flat = in.reshape({-1});
    if (self.rank() != root) {
      send_block(flat, 0, n, root, ctx);
      return;
    }
    grouped(ctx, root, [&](int r) { recv_block(out, r * n, n, r, ctx); });
    out.narrow(0, root * n, n).copy_(flat);
  }
  // The root sends every other rank its block; its own is a copy.
  void scatter(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    const auto n = out.numel();
    at::Tensor flat = out.view({-1});
    if (self.rank() != root) {
      recv_block(flat, 0, n, root, ctx);
      return;
    }
    grouped(ctx, root, [&](int r) { send_block(in, r * n, n, r, ctx); });
    flat.copy_(in.narrow(0, root * n, n));
  }

  WorkPtr send(const at::Tensor& data, int dst, int, const OpContext& ctx) override {
    return launch(ctx, {data}, false,
                  [&] { send_block(data.view({-1}), 0, data.numel(), dst, ctx); });
  }
  WorkPtr recv(at::Tensor& data, int src, int, const OpContext& ctx) override {
    return launch(ctx, {data}, false, [&] {
      at::Tensor flat = data.view({-1});
      recv_block(flat, 0, data.numel(), src, ctx);
    });
  }
  WorkPtr barrier(const OpContext& ctx) override {
    at::Tensor token =
        at::zeros({1}, at::TensorOptions()
                           .dtype(at::kFloat)
                           .device(at::kCUDA, static_cast<c10::DeviceIndex>(group_device())));
    // Blocking: wait() returns once every rank's all_reduce finished.
    return launch(ctx, {token}, true, [&] { all_reduce(token, ReduceOp::kSum, ctx); });
  }
};

ProcessGroupNCCL::ProcessGroupNCCL(std::shared_ptr<Store> store, int rank, int size,
                                   NcclOptions options, std::string name)
    : ProcessGroup(rank, size, std::move(name)), impl_(std::make_unique<Impl>(*this, options)) {
  DTRAIN_CHECK(store != nullptr, "ProcessGroupNCCL '", this->name(), "': the store is null");
  DTRAIN_CHECK(options.timeout.count() > 0, "ProcessGroupNCCL '", this->name(),
               "': timeout must be positive, got ", options.timeout.count(), " ms");
  DTRAIN_CHECK(options.poll_interval.count() > 0, "ProcessGroupNCCL '", this->name(),
               "': poll_interval must be positive, got ", options.poll_interval.count(), " ms");
  set_transport(*impl_);
  impl_->store = std::make_shared<PrefixStore>("nccl/" + this->name(), std::move(store));
  if (options.device >= 0) {
    DTRAIN_CHECK(options.device < c10::cuda::device_count(), "ProcessGroupNCCL '", this->name(),
                 "': device ", options.device, " does not exist; ",
                 static_cast<int>(c10::cuda::device_count()), " CUDA device(s) are visible");
    std::lock_guard<std::mutex> lock(impl_->launch_mutex);
    impl_->communicator(options.device, describe("creating the communicator"));
  }
  impl_->watchdog.start();
}

ProcessGroupNCCL::~ProcessGroupNCCL() {
  impl_->watchdog.stop();  // returns when nothing is in flight (done, failed or timed out)
  if (impl_->comm && !impl_->comm->aborted.load()) {
    const ncclResult_t result = ncclCommDestroy(impl_->comm->comm);
    if (result != ncclSuccess) {
      spdlog::warn("{}: ncclCommDestroy failed: {}", describe("closing the group"),
                   ncclGetErrorString(result));
    }
  }
  if (impl_->comm && impl_->comm->ready != nullptr) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(impl_->comm->device));
    cudaEventDestroy(impl_->comm->ready);
  }
}

}  // namespace dtrain::dist
