// ProcessGroupNCCL: the NCCL transport under the ProcessGroup front end
// (transport.h), on LibTorch's own c10d::ProcessGroupNCCL.
//
// Note [NCCL through LibTorch's process group]
// The bytes move through c10d::ProcessGroupNCCL, the NCCL process group
// the whole PyTorch world runs, from the torch wheel dtrain builds on (with
// the NCCL headers of the same release, so its class layout matches). It
// brings what a hand-written transport would have to get right: a
// communicator per pair for point-to-point (a ring where every rank posts
// its receive before its send cannot deadlock on one stream), grouped
// launches for gather, scatter and all_to_all, and streams per device.
// dtrain keeps what its contract says: the front end's checks, staging and
// names; a Work whose wait() orders the caller's stream; and timeouts.
// c10d's own error handling is off (TORCH_NCCL_ASYNC_ERROR_HANDLING=0 unless
// the user set it), so no process is torn down behind the caller's back:
// dtrain's watchdog (work_watchdog.h) fails a collective past its deadline
// with the operation and the ranks that never reached it, then aborts the
// group's communicators.
//
// Note [NCCL stream ordering]
// c10d runs each operation on its NCCL stream after the caller's current
// stream. A collective's result is needed at once by the front end's
// post-processing (copies back, the division of AVG), so the table below
// makes the caller's stream wait for it (GPU-side: the host goes on), and
// the Work records its end event there. Point-to-point operations are not
// waited on at issue -- a rank's send must not queue behind its own
// receive -- but in the Work's wait().
#include "dtrain/dist/process_group_nccl.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "c10d_store.h"
#include "dtrain/dist/store_names.h"
#include "dtrain/util/launch_env.h"
#include "nccl_utils.h"
#include "transport.h"
#include "work_watchdog.h"

namespace dtrain::dist {

using namespace detail;

namespace {

using C10dWork = c10::intrusive_ptr<c10d::Work>;

c10d::ReduceOp c10d_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kProduct:
      return c10d::ReduceOp::PRODUCT;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kAvg:
      return c10d::ReduceOp::AVG;
  }
  throw Error("unknown reduce op");
}

// The c10d operations of one dtrain operation, and its end event on the
// caller's stream once those it waited for at issue are done.
class NcclWork : public WatchedWork {
 public:
  NcclWork(OpContext ctx, int device, bool blocking, std::vector<at::Tensor> tensors,
           std::vector<C10dWork> issued)
      : WatchedWork(std::move(ctx)),
        device_(device),
        blocking_(blocking),
        tensors_(std::move(tensors)),
        issued_(std::move(issued)) {}

  ~NcclWork() override {
    if (end_ != nullptr) {
      c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
      cudaEventDestroy(end_);
    }
  }

  // Collectives: the caller's stream already waits for them (Note [NCCL
  // stream ordering]); the end event marks that point on it.
  void record_end(int rank) {
    const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_));
    DTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&end_, cudaEventDisableTiming), rank, description_);
    DTRAIN_CUDA_CHECK(cudaEventRecord(end_, stream.stream()), rank, description_);
  }

  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) override {
    if (blocking_ || timeout.count() > 0) {
      Work::wait(timeout);  // the watchdog finishes it, or fails it at its deadline
      return;
    }
    if (const auto error = exception()) {
      std::rethrow_exception(error);
    }
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    for (const C10dWork& work : issued_) {
      work->wait();  // the caller's stream waits; the host does not
    }
    if (end_ != nullptr) {
      DTRAIN_CUDA_CHECK(
          cudaStreamWaitEvent(
              c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream(),
              end_, 0),
          -1, description_);
    }
  }

  Progress poll(std::string& why) override {
    for (const C10dWork& work : issued_) {
      if (const std::exception_ptr error = work->exception()) {
        why = "NCCL failed: " + message_of(error);
        return Progress::kFailed;
      }
      if (!work->isCompleted()) {
        return Progress::kRunning;
      }
    }
    if (end_ == nullptr) {
      return Progress::kDone;
    }
    const cudaError_t state = cudaEventQuery(end_);
    if (state == cudaSuccess || state == cudaErrorNotReady) {
      return state == cudaSuccess ? Progress::kDone : Progress::kRunning;
    }
    why = std::string("the CUDA stream failed: ") + cudaGetErrorName(state) + " (" +
          cudaGetErrorString(state) + ")";
    return Progress::kFailed;
  }
  void release() override {
    tensors_.clear();
    issued_.clear();
  }

 private:
  static std::string message_of(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "an unknown error";
    }
  }

  int device_;
  bool blocking_;
  std::vector<at::Tensor> tensors_;  // alive until the GPU is done with them
  std::vector<C10dWork> issued_;
  cudaEvent_t end_ = nullptr;
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
        watchdog(*this, "NCCL process group", options.poll_interval) {}

  ProcessGroupNCCL& self;
  NcclOptions options;
  std::shared_ptr<Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> engine;

  // Launches hold launch_mutex: one device per group, and the c10d works of
  // the launch in progress.
  std::mutex launch_mutex;
  std::optional<int> device;
  std::vector<C10dWork> issued;
  std::atomic<bool> aborted{false};
  std::mutex reason_mutex;
  std::string abort_reason;

  // Declared last: it stops first, while the engine is still there.
  Watchdog watchdog;

  // c10d's NCCL group over the group's store, made at the first operation
  // (it needs a GPU; a group without one still names what it cannot do).
  // Its own timeout is longer than dtrain's, whose watchdog fails and names
  // a late collective first.
  void start_engine() {
    if (engine) {
      return;
    }
    // Note [NCCL through LibTorch's process group]: no teardown by c10d.
    ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0", /*overwrite=*/0);
    auto c10d_options = c10d::ProcessGroupNCCL::Options::create(/*is_high_priority_stream=*/true);
    c10d_options->timeout = 2 * options.timeout + std::chrono::minutes(1);
    engine = c10::make_intrusive<c10d::ProcessGroupNCCL>(as_c10d_store(store, options.timeout),
                                                         self.rank(), self.size(), c10d_options);
  }

  // The group's device: the first tensor's fixes it.
  void use_device(int index, const std::string& what) {
    if (!device) {
      device = index;
      spdlog::debug("{}: NCCL on cuda:{}", self.describe("nccl group"), index);
    }
    DTRAIN_CHECK(*device == index, what, ": the group's NCCL communicators are on cuda:", *device,
                 ", got a tensor on cuda:", index, " (use one device per group and rank)");
    if (aborted.load()) {
      std::lock_guard<std::mutex> lock(reason_mutex);
      throw CollectiveError(what + ": the group's NCCL communicators were aborted earlier (" +
                            abort_reason + ")");
    }
  }

  // Runs `body` on the caller's stream with the group's device current;
  // the c10d works it issues belong to the returned Work. `synced`: the
  // caller's stream already waits for them (collectives).
  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor> tensors, bool blocking, bool synced,
                 const std::function<void()>& body) {
    const int index = tensors.front().device().index();
    std::lock_guard<std::mutex> lock(launch_mutex);
    use_device(index, ctx.what);
    c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(index));
    issued.clear();
    try {
      start_engine();
      body();
    } catch (const c10::Error& e) {
      throw CollectiveError(ctx.what + ": " + e.what_without_backtrace());
    }
    auto work = std::make_shared<NcclWork>(ctx, index, blocking || options.blocking_wait,
                                           std::move(tensors), std::move(issued));
    if (synced) {
      work->record_end(self.rank());
    }
    watchdog.watch(work);
    return work;
  }

  // The front end's operations: AtIssue and InTurn both at the call.
  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor> tensors,
                 const AtIssue& at_issue) override {
    return launch(ctx, std::move(tensors), false, true, [&] { run_in_turn(at_issue(), ctx); });
  }

  // A collective of c10d, kept with the launch; the caller's stream waits
  // for it (Note [NCCL stream ordering]).
  void collective(C10dWork work) {
    work->wait();
    issued.push_back(std::move(work));
  }

  // Marks the group aborted, so that new operations fail at once; true
  // for the caller that marked it.
  bool mark_aborted(const std::string& reason) {
    if (aborted.exchange(true)) {
      return false;
    }
    std::lock_guard<std::mutex> lock(reason_mutex);
    abort_reason = reason;
    return true;
  }

  // Note [NCCL watchdog] (work_watchdog.h): what the group does for it.
  void before_first_poll() override {
    if (device) {
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(*device));
    }
  }
  std::string diagnose(const OpContext& ctx) override { return diagnose_timeout(store, self, ctx); }
  bool mark_broken(const std::string& failure) override { return mark_aborted(failure); }
  void abort() override {
    if (engine) {
      engine->abort();
    }
  }

  // CPU tensors on an NCCL group: Note [Tensors on a device the backend does
  // not move] (collective_args.h).
  c10::Device staging_device(const std::string& what) override {
    DTRAIN_CHECK(c10::cuda::device_count() > 0, what,
                 ": CPU tensors go through the group's GPU, but no CUDA device is visible");
    std::lock_guard<std::mutex> lock(launch_mutex);
    return c10::Device(c10::kCUDA,
                       static_cast<c10::DeviceIndex>(device.value_or(c10::cuda::current_device())));
  }

  // The transport's table, called in a launch.
  void broadcast(at::Tensor& data, int root, const OpContext&) override {
    std::vector<at::Tensor> tensors{data};
    collective(engine->broadcast(tensors, {.rootRank = root}));
  }
  void all_reduce(at::Tensor& data, ReduceOp op, const OpContext&) override {
    std::vector<at::Tensor> tensors{data};
    collective(engine->allreduce(tensors, {.reduceOp = c10d_op(op)}));
  }
  void reduce(at::Tensor& data, ReduceOp op, int root, const OpContext&) override {
    std::vector<at::Tensor> tensors{data};
    collective(engine->reduce(tensors, {.reduceOp = c10d_op(op), .rootRank = root}));
  }
  void all_gather(const at::Tensor& in, at::Tensor& out, const OpContext&) override {
    at::Tensor input = in;
    collective(engine->_allgather_base(out, input));
  }
  void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op, const OpContext&) override {
    collective(engine->_reduce_scatter_base(out, in, {.reduceOp = c10d_op(op)}));
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const BlockSizes& blocks,
                  const OpContext&) override {
    at::Tensor input = in;
    std::vector<int64_t> out_sizes = blocks.out;
    std::vector<int64_t> in_sizes = blocks.in;
    collective(engine->alltoall_base(out, input, out_sizes, in_sizes));
  }
  // The root gets every rank's block of `out`, one view each.
  void gather(const at::Tensor& in, at::Tensor& out, int root, const OpContext&) override {
    std::vector<at::Tensor> inputs{in.reshape({-1})};
    std::vector<std::vector<at::Tensor>> outputs = root_blocks(out, self.rank(), root, self.size());
    collective(engine->gather(outputs, inputs, {.rootRank = root}));
  }
  // The root sends every rank its block of `in`.
  void scatter(const at::Tensor& in, at::Tensor& out, int root, const OpContext&) override {
    std::vector<at::Tensor> outputs{out.view({-1})};
    std::vector<std::vector<at::Tensor>> inputs = root_blocks(in, self.rank(), root, self.size());
    collective(engine->scatter(outputs, inputs, {.rootRank = root}));
  }

  WorkPtr send(const at::Tensor& data, int dst, int tag, const OpContext& ctx) override {
    return launch(ctx, {data}, false, false, [&] {
      std::vector<at::Tensor> tensors{data.view({-1})};
      issued.push_back(engine->send(tensors, dst, tag));
    });
  }
  WorkPtr recv(at::Tensor& data, int src, int tag, const OpContext& ctx) override {
    return launch(ctx, {data}, false, false, [&] {
      std::vector<at::Tensor> tensors{data.view({-1})};
      issued.push_back(engine->recv(tensors, src, tag));
    });
  }
  // An all_reduce of one value on the group's device, blocking the host:
  // wait() returns once every rank reached it.
  WorkPtr barrier(const OpContext& ctx) override {
    const c10::Device on = staging_device(ctx.what);
    at::Tensor token = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(on));
    return launch(ctx, {token}, true, true, [&] { all_reduce(token, ReduceOp::kSum, ctx); });
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
    // Every rank takes part at once: a barrier on the device makes its communicator.
    impl_->device = options.device;
    impl_->watchdog.start();
    barrier()->wait();
    return;
  }
  impl_->watchdog.start();
}

ProcessGroupNCCL::~ProcessGroupNCCL() {
  impl_->watchdog.stop();  // returns when nothing is in flight (done, failed or timed out)
  if (impl_->engine && !impl_->aborted.load()) {
    try {
      impl_->engine->shutdown();
    } catch (const std::exception& e) {
      spdlog::warn("{}: shutting down NCCL failed: {}", describe("closing the group"), e.what());
    }
  }
}

}  // namespace dtrain::dist
