// ProcessGroupNCCL: checks tensors, creates the group's communicator on
// first use, launches each operation on the communicator's stream after the
// caller's stream, and lets a watchdog thread finish (or time out) the Work.
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
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/dist/prefix_store.h"
#include "dtrain/util/launch_env.h"
#include "nccl_utils.h"
#include "timeout_diagnosis.h"

namespace dtrain::dist {

// Argument checks and tensor plumbing shared by every backend.
using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;

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

class NcclWork : public Work {
 public:
  NcclWork(std::string description, std::shared_ptr<Communicator> comm, int rank,
           Clock::time_point deadline, std::chrono::milliseconds timeout, bool blocking,
           std::vector<at::Tensor> tensors)
      : Work(std::move(description)),
        comm_(std::move(comm)),
        rank_(rank),
        deadline_(deadline),
        timeout_(timeout),
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

  // Called by the watchdog: cudaSuccess when done, cudaErrorNotReady while running.
  cudaError_t query() const { return cudaEventQuery(end_); }
  bool past_deadline(Clock::time_point now) const { return now > deadline_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  void release_tensors() { tensors_.clear(); }

  // A collective: its number among the group's collectives and its op, for
  // Note [Which rank a timeout waited on]; seq() is 0 for send and recv.
  void set_collective(std::int64_t seq, std::string op) {
    seq_ = seq;
    op_ = std::move(op);
  }
  std::int64_t seq() const { return seq_; }
  const std::string& op() const { return op_; }

 private:
  std::shared_ptr<Communicator> comm_;
  int rank_;
  cudaEvent_t end_ = nullptr;
  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_;
  bool blocking_;
  std::vector<at::Tensor> tensors_;  // alive until the GPU is done with them
  std::int64_t seq_ = 0;
  std::string op_;
};

void check_cuda_tensor(const at::Tensor& tensor, const std::string& what) {
  DTRAIN_CHECK(tensor.defined(), what, ": the tensor is undefined");
  DTRAIN_CHECK(tensor.is_cuda(), what, ": nccl takes CUDA tensors here, got one on ",
               tensor.device().str(),
               " (CPU tensors are staged through the GPU only for broadcast, all_reduce, reduce "
               "and all_gather; use the gloo backend for CPU work)");
  nccl::to_nccl(tensor.scalar_type());
}

bool on_cpu(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().is_cpu();
}

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

struct ProcessGroupNCCL::Impl {
  ProcessGroupNCCL* self = nullptr;
  std::shared_ptr<Store> store;
  NcclOptions options;

  // The communicator; launches hold launch_mutex (an ncclComm_t is not thread-safe).
  std::mutex launch_mutex;
  std::shared_ptr<Communicator> comm;

  // Collectives launched so far, for Note [Which rank a timeout waited on];
  // under launch_mutex.
  std::int64_t collectives = 0;

  // Watchdog state.
  std::mutex watch_mutex;
  std::condition_variable watch_cv;
  std::list<std::shared_ptr<NcclWork>> in_flight;
  bool stopping = false;
  std::thread watchdog;

  std::chrono::milliseconds timeout_or_default(std::chrono::milliseconds timeout) const {
    return timeout.count() > 0 ? timeout : options.timeout;
  }

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
    const int rank = self->rank();
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
    DTRAIN_NCCL_CHECK(ncclCommInitRank(&created->comm, self->size(), id, rank), rank, context);
    comm = created;
    spdlog::debug("{}: NCCL communicator on cuda:{}", self->describe("nccl group"), device);
    return comm;
  }

  // Launches `body` on the communicator's stream (Note [NCCL stream ordering]).
  // `op` names a collective (empty for send and recv, which name their
  // peer); `tensors` are the caller's tensors the operation reads or writes.
  template <typename Body>
  WorkPtr launch(const std::string& op, const std::string& what, std::vector<at::Tensor> tensors,
                 std::chrono::milliseconds requested_timeout, bool blocking, Body&& body) {
    const int device = tensors.front().device().index();
    for (const auto& t : tensors) {
      DTRAIN_CHECK(t.device().index() == device, what, ": every tensor must be on cuda:", device,
                   ", got one on ", t.device().str());
    }
    const auto timeout = timeout_or_default(requested_timeout);
    const int rank = self->rank();
    std::lock_guard<std::mutex> lock(launch_mutex);
    const auto c = communicator(device, what);
    c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
    const auto caller = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
    DTRAIN_CUDA_CHECK(cudaEventRecord(c->ready, caller.stream()), rank, what);
    DTRAIN_CUDA_CHECK(cudaStreamWaitEvent(c->stream.stream(), c->ready, 0), rank, what);
    for (const auto& t : tensors) {
      if (t.storage().data_ptr().get() != nullptr) {
        c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), c->stream);
      }
    }
    auto work = std::make_shared<NcclWork>(what, c, rank, Clock::now() + timeout, timeout,
                                           blocking || options.blocking_wait, std::move(tensors));
    if (!op.empty()) {
      work->set_collective(++collectives, op);
    }
    {
      // Copies and temporaries of `body` run on (and belong to) the NCCL stream.
      c10::cuda::CUDAStreamGuard stream_guard(c->stream);
      body(c->comm, c->stream.stream(), rank);
    }
    work->record_end();
    {
      std::lock_guard<std::mutex> watch(watch_mutex);
      in_flight.push_back(work);
    }
    watch_cv.notify_one();
    return work;
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

  // Note [NCCL watchdog]
  // One thread per group polls the end event of every Work in flight, in
  // issue order. A finished event finishes its Work. An asynchronous NCCL
  // error, or a Work past its deadline, fails every Work in flight, so
  // waiters raise instead of hanging, and then aborts the communicator
  // (which unblocks the GPU kernels waiting on peers). In that order because
  // ncclCommAbort can block until work queued ahead of the collective on
  // its stream drains (seen on an H200: a collective behind a 10 s kernel
  // held ncclCommAbort for seconds); the tensors are released only after it.
  void watch() {
    bool device_set = false;
    std::unique_lock<std::mutex> lock(watch_mutex);
    while (true) {
      if (in_flight.empty()) {
        if (stopping) {
          return;
        }
        watch_cv.wait(lock, [this] { return stopping || !in_flight.empty(); });
        continue;
      }
      auto works = in_flight;  // poll without holding the lock
      lock.unlock();
      if (!device_set) {
        c10::cuda::set_device(static_cast<c10::DeviceIndex>(comm->device));
        device_set = true;
      }
      std::vector<std::shared_ptr<NcclWork>> done;
      std::string failure;
      const NcclWork* culprit = nullptr;
      bool timed_out = false;
      ncclResult_t async_error = ncclSuccess;
      if (!comm->aborted.load() && ncclCommGetAsyncError(comm->comm, &async_error) == ncclSuccess &&
          async_error != ncclSuccess && async_error != ncclInProgress) {
        culprit = works.front().get();
        failure = culprit->description() +
                  ": NCCL reported an asynchronous error: " + nccl::result_name(async_error) +
                  " (" + ncclGetErrorString(async_error) + ")";
      }
      const auto now = Clock::now();
      for (const auto& work : works) {
        if (culprit != nullptr) {
          break;
        }
        const cudaError_t state = work->query();
        if (state == cudaSuccess) {
          done.push_back(work);
        } else if (state != cudaErrorNotReady) {
          culprit = work.get();
          failure = work->description() + ": the CUDA stream failed: " + cudaGetErrorName(state) +
                    " (" + cudaGetErrorString(state) + ")";
        } else if (work->past_deadline(now)) {
          culprit = work.get();
          timed_out = true;
          failure = work->description() + ": not finished after " +
                    std::to_string(work->timeout().count()) +
                    " ms (a peer may be missing, or stuck before this collective)";
        }
      }
      if (timed_out && culprit->seq() > 0) {
        // Before the abort: the peers still in this collective report theirs.
        failure +=
            diagnose_timeout(store, self->name(), self->rank(), self->global_ranks(),
                             culprit->seq(), culprit->op(), diagnosis_grace(culprit->timeout()));
      }
      for (const auto& work : done) {
        work->release_tensors();
        work->finish();
      }
      const bool must_abort = culprit != nullptr && mark_aborted(failure);
      if (must_abort) {
        spdlog::error("{}; aborting the NCCL communicator", failure);
      }
      lock.lock();
      for (const auto& work : done) {
        in_flight.remove(work);
      }
      if (culprit == nullptr) {
        watch_cv.wait_for(lock, options.poll_interval);
        continue;
      }
      const std::string reason = failure + "; the group's NCCL communicator was aborted";
      for (const auto& work : in_flight) {
        const std::string message =
            work.get() == culprit ? reason : work->description() + ": aborted because " + reason;
        work->finish(timed_out ? std::make_exception_ptr(CollectiveTimeoutError(message))
                               : std::make_exception_ptr(CollectiveError(message)));
      }
      auto failed = std::move(in_flight);
      in_flight.clear();
      lock.unlock();
      if (must_abort) {
        ncclCommAbort(comm->comm);
      }
      for (const auto& work : failed) {
        work->release_tensors();
      }
      lock.lock();
    }
  }
};

ProcessGroupNCCL::ProcessGroupNCCL(std::shared_ptr<Store> store, int rank, int size,
                                   NcclOptions options, std::string name)
    : ProcessGroup(rank, size, std::move(name)), impl_(std::make_unique<Impl>()) {
  DTRAIN_CHECK(store != nullptr, "ProcessGroupNCCL '", this->name(), "': the store is null");
  DTRAIN_CHECK(options.timeout.count() > 0, "ProcessGroupNCCL '", this->name(),
               "': timeout must be positive, got ", options.timeout.count(), " ms");
  DTRAIN_CHECK(options.poll_interval.count() > 0, "ProcessGroupNCCL '", this->name(),
               "': poll_interval must be positive, got ", options.poll_interval.count(), " ms");
  impl_->self = this;
  impl_->options = options;
  impl_->store = std::make_shared<PrefixStore>("nccl/" + this->name(), std::move(store));
  if (options.device >= 0) {
    DTRAIN_CHECK(options.device < c10::cuda::device_count(), "ProcessGroupNCCL '", this->name(),
                 "': device ", options.device, " does not exist; ",
                 static_cast<int>(c10::cuda::device_count()), " CUDA device(s) are visible");
    std::lock_guard<std::mutex> lock(impl_->launch_mutex);
    impl_->communicator(options.device, describe("creating the communicator"));
  }
  impl_->watchdog = std::thread([impl = impl_.get()] { impl->watch(); });
}

ProcessGroupNCCL::~ProcessGroupNCCL() {
  {
    std::lock_guard<std::mutex> lock(impl_->watch_mutex);
    impl_->stopping = true;
  }
  impl_->watch_cv.notify_all();
  impl_->watchdog.join();  // returns when nothing is in flight (done, failed or timed out)
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

// CPU tensors on an NCCL group: Note [Tensors on a device the backend does
// not move] (collective_args.h).
int ProcessGroupNCCL::group_device() const {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->comm ? impl_->comm->device : static_cast<int>(c10::cuda::current_device());
}

WorkPtr ProcessGroupNCCL::through_device(const std::string& what,
                                         const std::vector<at::Tensor>& inputs,
                                         const std::vector<at::Tensor*>& outputs,
                                         const StagedRun& run) {
  DTRAIN_CHECK(c10::cuda::device_count() > 0, what,
               ": CPU tensors go through the group's GPU, but no CUDA device is visible");
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(group_device()));
  return staged_on(device, c10::kCPU, what, inputs, outputs, run);
}

WorkPtr ProcessGroupNCCL::send(const at::Tensor& tensor, int dst, int tag) {
  const std::string what = describe("send to rank " + std::to_string(dst));
  check_cuda_tensor(tensor, what);
  check_peer(dst, rank(), size(), what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  DTRAIN_CHECK(tag >= 0, what, ": tag must be >= 0, got ", tag);
  return impl_->launch(
      /*op=*/"", what, {tensor}, {}, false, [&](ncclComm_t comm, cudaStream_t stream, int rank) {
        DTRAIN_NCCL_CHECK(ncclSend(tensor.const_data_ptr(), tensor.numel(),
                                   nccl::to_nccl(tensor.scalar_type()), dst, comm, stream),
                          rank, what);
      });
}

WorkPtr ProcessGroupNCCL::recv(at::Tensor& tensor, int src, int tag) {
  const std::string what = describe("recv from rank " + std::to_string(src));
  check_cuda_tensor(tensor, what);
  check_peer(src, rank(), size(), what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  DTRAIN_CHECK(tag >= 0, what, ": tag must be >= 0, got ", tag);
  return impl_->launch(
      /*op=*/"", what, {tensor}, {}, false, [&](ncclComm_t comm, cudaStream_t stream, int rank) {
        DTRAIN_NCCL_CHECK(ncclRecv(tensor.mutable_data_ptr(), tensor.numel(),
                                   nccl::to_nccl(tensor.scalar_type()), src, comm, stream),
                          rank, what);
      });
}

WorkPtr ProcessGroupNCCL::broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  const std::string op = "broadcast from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  if (on_cpu(tensor)) {
    return through_device(what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return broadcast(out[0], options);
    });
  }
  check_cuda_tensor(tensor, what);
  check_root(options.root, size(), what);
  return impl_->launch(
      op, what, {tensor}, options.timeout, false,
      [&](ncclComm_t comm, cudaStream_t stream, int rank) {
        on_contiguous(tensor, [&](at::Tensor& t) {
          DTRAIN_NCCL_CHECK(
              ncclBroadcast(t.const_data_ptr(), t.mutable_data_ptr(), t.numel(),
                            nccl::to_nccl(t.scalar_type()), options.root, comm, stream),
              rank, what);
        });
      });
}

WorkPtr ProcessGroupNCCL::all_reduce(at::Tensor& tensor, const AllreduceOptions& options) {
  const std::string op = "all_reduce(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  if (on_cpu(tensor)) {
    return through_device(what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return all_reduce(out[0], options);
    });
  }
  check_cuda_tensor(tensor, what);
  check_avg(options.op, tensor, what);
  return impl_->launch(op, what, {tensor}, options.timeout, false,
                       [&](ncclComm_t comm, cudaStream_t stream, int rank) {
                         on_contiguous(tensor, [&](at::Tensor& t) {
                           DTRAIN_NCCL_CHECK(
                               ncclAllReduce(t.const_data_ptr(), t.mutable_data_ptr(), t.numel(),
                                             nccl::to_nccl(t.scalar_type()),
                                             nccl::to_nccl(options.op), comm, stream),
                               rank, what);
                         });
                       });
}

WorkPtr ProcessGroupNCCL::reduce(at::Tensor& tensor, const ReduceOptions& options) {
  const std::string op =
      "reduce(" + to_string(options.op) + ") to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  if (on_cpu(tensor)) {
    return through_device(what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return reduce(out[0], options);
    });
  }
  check_cuda_tensor(tensor, what);
  check_root(options.root, size(), what);
  check_avg(options.op, tensor, what);
  return impl_->launch(op, what, {tensor}, options.timeout, false,
                       [&](ncclComm_t comm, cudaStream_t stream, int rank) {
                         on_contiguous(tensor, [&](at::Tensor& t) {
                           DTRAIN_NCCL_CHECK(
                               ncclReduce(t.const_data_ptr(), t.mutable_data_ptr(), t.numel(),
                                          nccl::to_nccl(t.scalar_type()), nccl::to_nccl(options.op),
                                          options.root, comm, stream),
                               rank, what);
                         });
                       });
}

WorkPtr ProcessGroupNCCL::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                     const CollectiveOptions& options) {
  const std::string op = "all_gather";
  const std::string what = describe(op);
  if (on_cpu(input)) {
    return through_device(what, {input}, pointers_to(outputs),
                          [&](std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) {
                            return all_gather(out, in[0], options);
                          });
  }
  check_cuda_tensor(input, what);
  check_one_per_rank(outputs, input, size(), what, "outputs");
  std::vector<at::Tensor> tensors = {input};
  tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  return impl_->launch(
      op, what, tensors, options.timeout, false,
      [&](ncclComm_t comm, cudaStream_t stream, int rank) {
        const at::Tensor in = input.contiguous();
        at::Tensor flat = at::empty({in.numel() * size()}, in.options());
        DTRAIN_NCCL_CHECK(ncclAllGather(in.const_data_ptr(), flat.mutable_data_ptr(), in.numel(),
                                        nccl::to_nccl(in.scalar_type()), comm, stream),
                          rank, what);
        for (int r = 0; r < size(); ++r) {
          outputs[r].copy_(flat.narrow(0, r * in.numel(), in.numel()).view(in.sizes()));
        }
      });
}

WorkPtr ProcessGroupNCCL::reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                         const AllreduceOptions& options) {
  const std::string op = "reduce_scatter(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  check_cuda_tensor(output, what);
  check_avg(options.op, output, what);
  check_one_per_rank(inputs, output, size(), what, "inputs");
  std::vector<at::Tensor> tensors = {output};
  tensors.insert(tensors.end(), inputs.begin(), inputs.end());
  return impl_->launch(op, what, tensors, options.timeout, false,
                       [&](ncclComm_t comm, cudaStream_t stream, int rank) {
                         std::vector<at::Tensor> flat_inputs;
                         for (const auto& in : inputs) {
                           flat_inputs.push_back(in.reshape({-1}));
                         }
                         const at::Tensor flat = at::cat(flat_inputs);
                         on_contiguous(output, [&](at::Tensor& out) {
                           DTRAIN_NCCL_CHECK(
                               ncclReduceScatter(flat.const_data_ptr(), out.mutable_data_ptr(),
                                                 out.numel(), nccl::to_nccl(out.scalar_type()),
                                                 nccl::to_nccl(options.op), comm, stream),
                               rank, what);
                         });
                       });
}

WorkPtr ProcessGroupNCCL::all_to_all(std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs,
                                     const CollectiveOptions& options) {
  const std::string op = "all_to_all";
  const std::string what = describe(op);
  check_count(inputs, size(), what, "inputs");
  check_count(outputs, size(), what, "outputs");
  std::vector<at::Tensor> tensors;
  for (int r = 0; r < size(); ++r) {
    check_cuda_tensor(inputs[r], what);
    check_cuda_tensor(outputs[r], what);
    DTRAIN_CHECK(outputs[r].scalar_type() == inputs[0].scalar_type() &&
                     inputs[r].scalar_type() == inputs[0].scalar_type(),
                 what, ": every tensor must have the dtype ", inputs[0].scalar_type(),
                 " of inputs[0]; inputs[", r, "] is ", inputs[r].scalar_type(), ", outputs[", r,
                 "] is ", outputs[r].scalar_type());
    tensors.push_back(inputs[r]);
    tensors.push_back(outputs[r]);
  }
  return impl_->launch(
      op, what, tensors, options.timeout, false,
      [&](ncclComm_t comm, cudaStream_t stream, int rank) {
        std::vector<at::Tensor> dense_in;
        std::vector<at::Tensor> dense_out;
        for (int r = 0; r < size(); ++r) {
          dense_in.push_back(inputs[r].contiguous());
          dense_out.push_back(outputs[r].is_contiguous() ? outputs[r] : at::empty_like(outputs[r]));
        }
        // Note: one NCCL group, so every pair's send and recv run together.
        DTRAIN_NCCL_CHECK(ncclGroupStart(), rank, what);
        for (int r = 0; r < size(); ++r) {
          DTRAIN_NCCL_CHECK(ncclSend(dense_in[r].const_data_ptr(), dense_in[r].numel(),
                                     nccl::to_nccl(dense_in[r].scalar_type()), r, comm, stream),
                            rank, what);
          DTRAIN_NCCL_CHECK(ncclRecv(dense_out[r].mutable_data_ptr(), dense_out[r].numel(),
                                     nccl::to_nccl(dense_out[r].scalar_type()), r, comm, stream),
                            rank, what);
        }
        DTRAIN_NCCL_CHECK(ncclGroupEnd(), rank, what);
        for (int r = 0; r < size(); ++r) {
          if (!outputs[r].is_same(dense_out[r])) {
            outputs[r].copy_(dense_out[r]);
          }
        }
      });
}

WorkPtr ProcessGroupNCCL::gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                 const RootOptions& options) {
  const std::string op = "gather to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cuda_tensor(input, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  std::vector<at::Tensor> tensors = {input};
  if (is_root) {
    check_one_per_rank(outputs, input, size(), what, "outputs");
    tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  }
  return impl_->launch(op, what, tensors, options.timeout, false,
                       [&](ncclComm_t comm, cudaStream_t stream, int rank) {
                         const at::Tensor in = input.contiguous();
                         const auto dtype = nccl::to_nccl(in.scalar_type());
                         if (!is_root) {
                           DTRAIN_NCCL_CHECK(ncclSend(in.const_data_ptr(), in.numel(), dtype,
                                                      options.root, comm, stream),
                                             rank, what);
                           return;
                         }
                         std::vector<at::Tensor> dense;
                         for (const auto& out : outputs) {
                           dense.push_back(out.is_contiguous() ? out : at::empty_like(out));
                         }
                         DTRAIN_NCCL_CHECK(ncclGroupStart(), rank, what);
                         for (int r = 0; r < size(); ++r) {
                           if (r != rank) {
                             DTRAIN_NCCL_CHECK(ncclRecv(dense[r].mutable_data_ptr(),
                                                        dense[r].numel(), dtype, r, comm, stream),
                                               rank, what);
                           }
                         }
                         DTRAIN_NCCL_CHECK(ncclGroupEnd(), rank, what);
                         dense[rank].copy_(in);
                         for (int r = 0; r < size(); ++r) {
                           if (!outputs[r].is_same(dense[r])) {
                             outputs[r].copy_(dense[r]);
                           }
                         }
                       });
}

WorkPtr ProcessGroupNCCL::scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                  const RootOptions& options) {
  const std::string op = "scatter from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cuda_tensor(output, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  std::vector<at::Tensor> tensors = {output};
  if (is_root) {
    check_one_per_rank(inputs, output, size(), what, "inputs");
    tensors.insert(tensors.end(), inputs.begin(), inputs.end());
  }
  return impl_->launch(op, what, tensors, options.timeout, false,
                       [&](ncclComm_t comm, cudaStream_t stream, int rank) {
                         on_contiguous(output, [&](at::Tensor& out) {
                           const auto dtype = nccl::to_nccl(out.scalar_type());
                           if (!is_root) {
                             DTRAIN_NCCL_CHECK(ncclRecv(out.mutable_data_ptr(), out.numel(), dtype,
                                                        options.root, comm, stream),
                                               rank, what);
                             return;
                           }
                           std::vector<at::Tensor> dense;
                           for (const auto& in : inputs) {
                             dense.push_back(in.contiguous());
                           }
                           DTRAIN_NCCL_CHECK(ncclGroupStart(), rank, what);
                           for (int r = 0; r < size(); ++r) {
                             if (r != rank) {
                               DTRAIN_NCCL_CHECK(ncclSend(dense[r].const_data_ptr(),
                                                          dense[r].numel(), dtype, r, comm, stream),
                                                 rank, what);
                             }
                           }
                           DTRAIN_NCCL_CHECK(ncclGroupEnd(), rank, what);
                           out.copy_(dense[rank]);
                         });
                       });
}

WorkPtr ProcessGroupNCCL::barrier(const CollectiveOptions& options) {
  const std::string op = "barrier";
  const std::string what = describe(op);
  const int device = group_device();
  at::Tensor token = at::zeros({1}, at::TensorOptions()
                                        .dtype(at::kFloat)
                                        .device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
  // Blocking: wait() returns once every rank's all_reduce finished.
  return impl_->launch(op, what, {token}, options.timeout, true,
                       [&](ncclComm_t comm, cudaStream_t stream, int rank) {
                         DTRAIN_NCCL_CHECK(
                             ncclAllReduce(token.const_data_ptr(), token.mutable_data_ptr(), 1,
                                           ncclFloat32, ncclSum, comm, stream),
                             rank, what);
                       });
}

}  // namespace dtrain::dist
