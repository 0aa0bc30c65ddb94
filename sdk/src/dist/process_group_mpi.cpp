// ProcessGroupMPI: checks tensors, queues each collective on the group's
// worker thread, posts it as an MPI non-blocking collective and polls it
// against the op's deadline.
#include "dtrain/dist/process_group_mpi.h"

// Only MPI's C API is used; keep OpenMPI's deprecated C++ bindings out.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/dist/prefix_store.h"
#include "mpi_backend.h"
#include "timeout_diagnosis.h"
#include "work_queue.h"

namespace dtrain::dist {

// Argument checks and tensor plumbing shared by every backend.
using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;

// Note [One MPI call at a time]
// dtrain asks for MPI_THREAD_SERIALIZED (it accepts more) and makes every
// MPI call -- posting, MPI_Test, communicator setup -- while holding
// mpi_mutex(). Workers of different groups and threads waiting on send/recv
// Works thus take turns; nobody holds the lock while waiting, they poll
// with MPI_Test, which is also what drives MPI's progress. The only blocking
// call under the lock is MPI_Comm_create_group, whose members first meet in
// the store, so it does not wait long.
std::mutex& mpi_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Set under mpi_mutex() by the exit handler; no MPI call may follow.
bool g_finalized = false;

// float16 and bfloat16: two-byte datatypes with dtrain's reductions.
MPI_Datatype g_half_type = MPI_DATATYPE_NULL;
MPI_Datatype g_bfloat16_type = MPI_DATATYPE_NULL;
MPI_Op g_half_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum prod min max

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(std::max(length, 0)));
}

void mpi_check(int code, const std::string& what, const char* call) {
  if (code != MPI_SUCCESS) {
    throw CollectiveError(what + ": " + call + " failed: " + mpi_error_text(code));
  }
}

// Call with mpi_mutex() held.
void check_not_finalized(const std::string& what) {
  DTRAIN_CHECK_AS(CollectiveError, !g_finalized, what,
                  ": MPI was already finalized (the process is exiting)");
}

template <typename T, int kOp>
void combine(const void* in, void* inout, int length) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < length; ++i) {
    const float x = static_cast<float>(a[i]);
    const float y = static_cast<float>(b[i]);
    float r = 0;
    if constexpr (kOp == 0) {
      r = x + y;
    } else if constexpr (kOp == 1) {
      r = x * y;
    } else if constexpr (kOp == 2) {
      r = std::min(x, y);
    } else {
      r = std::max(x, y);
    }
    b[i] = static_cast<T>(r);
  }
}

template <int kOp>
void half_op(void* in, void* inout, int* length, MPI_Datatype* type) {
  if (*type == g_half_type) {
    combine<c10::Half, kOp>(in, inout, *length);
  } else {
    combine<c10::BFloat16, kOp>(in, inout, *length);
  }
}

void finalize_at_exit() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (MPI_Op& op : g_half_ops) {
      if (op != MPI_OP_NULL) {
        MPI_Op_free(&op);
      }
    }
    for (MPI_Datatype* type : {&g_half_type, &g_bfloat16_type}) {
      if (*type != MPI_DATATYPE_NULL) {
        MPI_Type_free(type);
      }
    }
    MPI_Finalize();
  }
  g_finalized = true;
}

// Initialises MPI once per process (unless the program did) and creates
// dtrain's datatypes and ops. Thread-safe; a failed attempt may be retried.
void ensure_mpi() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (initialized) {
      MPI_Query_thread(&provided);
    } else {
      mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                "initialising MPI", "MPI_Init_thread");
      std::atexit(finalize_at_exit);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    DTRAIN_CHECK(provided >= MPI_THREAD_SERIALIZED,
                 "dtrain's use of MPI (backend mpi, or the store's address under mpirun "
                 "without MASTER_PORT) needs MPI_THREAD_SERIALIZED or higher, but MPI provides "
                 "thread level ",
                 provided,
                 initialized ? " (the program called MPI_Init itself; use MPI_Init_thread)" : "");
    MPI_Type_contiguous(2, MPI_BYTE, &g_half_type);
    MPI_Type_commit(&g_half_type);
    MPI_Type_contiguous(2, MPI_BYTE, &g_bfloat16_type);
    MPI_Type_commit(&g_bfloat16_type);
    MPI_Op_create(&half_op<0>, 1, &g_half_ops[0]);
    MPI_Op_create(&half_op<1>, 1, &g_half_ops[1]);
    MPI_Op_create(&half_op<2>, 1, &g_half_ops[2]);
    MPI_Op_create(&half_op<3>, 1, &g_half_ops[3]);
  });
}

MPI_Datatype to_mpi(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kHalf:
      return g_half_type;
    case at::kBFloat16:
      return g_bfloat16_type;
    case at::kInt:
      return MPI_INT32_T;
    case at::kLong:
      return MPI_INT64_T;
    case at::kByte:
      return MPI_UINT8_T;
    default:
      throw Error(std::string("mpi supports float32, float64, float16, bfloat16, int32, int64 "
                              "and uint8 tensors, got ") +
                  std::string(c10::toString(type)));
  }
}

MPI_Op to_mpi(ReduceOp op, at::ScalarType type) {
  const bool half = type == at::kHalf || type == at::kBFloat16;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:  // summed, then divided by the group size
      return half ? g_half_ops[0] : MPI_SUM;
    case ReduceOp::kProduct:
      return half ? g_half_ops[1] : MPI_PROD;
    case ReduceOp::kMin:
      return half ? g_half_ops[2] : MPI_MIN;
    case ReduceOp::kMax:
      return half ? g_half_ops[3] : MPI_MAX;
  }
  throw Error("unknown ReduceOp");
}

int mpi_count(int64_t count, const std::string& what) {
  DTRAIN_CHECK(count <= INT_MAX, what, ": backend mpi moves at most ", INT_MAX,
               " elements (bytes for send/recv) per call, got ", count);
  return static_cast<int>(count);
}

// Note [Abandoned buffers]
// A request that timed out is still owned by MPI: a collective cannot be
// cancelled and a send may still read its buffer. Its tensors are kept here
// for the rest of the process so MPI never writes into freed memory.
void abandon(std::vector<at::Tensor> tensors) {
  static std::mutex mutex;
  static auto* kept = new std::vector<at::Tensor>();  // never freed, on purpose
  std::lock_guard<std::mutex> lock(mutex);
  for (auto& t : tensors) {
    kept->push_back(std::move(t));
  }
}

// A receive whose message was larger than its tensor (MPI_ERR_TRUNCATE):
// the receive's work says so in the words of the smaller case.
class TruncatedReceive : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

// Polls `request` with MPI_Test until it completes (true) or `deadline` passes (false).
bool poll(MPI_Request& request, Clock::time_point deadline, const std::string& what,
          MPI_Status* status = MPI_STATUS_IGNORE) {
  const Clock::time_point start = Clock::now();
  for (int sleeps = 0;;) {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      check_not_finalized(what);
      int done = 0;
      const int code = MPI_Test(&request, &done, status);
      int error_class = MPI_SUCCESS;
      if (code != MPI_SUCCESS && MPI_Error_class(code, &error_class) == MPI_SUCCESS &&
          error_class == MPI_ERR_TRUNCATE) {
        throw TruncatedReceive(what + ": " + mpi_error_text(code));
      }
      mpi_check(code, what, "MPI_Test");
      if (done) {
        return true;
      }
    }
    if (Clock::now() >= deadline) {
      return false;
    }
    // Non-blocking collectives progress only inside MPI_Test, so each sleep
    // stalls the whole schedule: yield (low latency) for the first 5 ms,
    // then back off to at most 1 ms between tests so that oversubscribed
    // ranks leave the cores to each other. (Yielding for 100 tests only
    // made a 1 MB all-reduce take 3.4x raw MPI_Allreduce's time.)
    if (Clock::now() - start < std::chrono::milliseconds(5)) {
      std::this_thread::yield();
    } else {
      ++sleeps;
      std::this_thread::sleep_for(std::chrono::microseconds(std::min(sleeps, 100) * 10));
    }
  }
}

[[noreturn]] void abort_job(MPI_Comm comm, const std::string& message) {
  spdlog::critical("{}; aborting the MPI job (MpiOptions::abort_on_timeout)", message);
  MPI_Abort(comm, 1);
  std::abort();  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

// A send or recv: waits by polling its request, on the waiting thread.
// MPI moves it only inside MPI calls, so is_completed() tests the request
// too (torch's MPI work calls MPI_Test in isCompleted): a caller may poll
// it instead of waiting. Tests and waits take turns on wait_mutex_; each
// MPI call holds mpi_mutex() (Note [One MPI call at a time]).
class RequestWork : public Work {
 public:
  RequestWork(std::string description, MPI_Request request, at::Tensor tensor, int64_t bytes,
              MPI_Comm comm, const MpiOptions& options)
      : Work(std::move(description)),
        request_(request),
        tensor_(std::move(tensor)),
        bytes_(bytes),
        comm_(comm),
        options_(options) {}

  ~RequestWork() override {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    if (request_ != MPI_REQUEST_NULL && !g_finalized) {
      // Dropped without wait(): MPI finishes it in the background.
      MPI_Request_free(&request_);
      abandon({tensor_});
    }
  }

  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) override {
    {
      std::lock_guard<std::mutex> waiting(wait_mutex_);
      if (!Work::is_completed()) {
        const auto limit = timeout.count() > 0 ? timeout : options_.timeout;
        settle([&] { complete(limit); });
      }
    }
    Work::wait();
  }

  // One MPI_Test when not finished yet. While another thread waits, that
  // thread tests the request: this returns what is known without blocking.
  bool is_completed() override {
    std::unique_lock<std::mutex> testing(wait_mutex_, std::try_to_lock);
    if (testing.owns_lock() && !Work::is_completed()) {
      settle([&] {
        MPI_Status status;
        if (poll(request_, Clock::now(), description_, &status)) {  // a deadline passed: one test
          received(status);
          finish();
        }
      });
    }
    return Work::is_completed();
  }

 private:
  // Runs `step`, which finishes the work or leaves it running; a failure
  // finishes it with the error, which wait() rethrows.
  template <typename Step>
  void settle(const Step& step) {
    try {
      step();
    } catch (const TruncatedReceive&) {
      finish(std::make_exception_ptr(CollectiveError(
          dtrain::detail::concat(description_, ": received more than the expected ", bytes_,
                                 " bytes (the sender's tensor has a different size or "
                                 "dtype)"))));
    } catch (const CollectiveError&) {
      finish(std::current_exception());
    } catch (const std::exception& e) {
      finish(std::make_exception_ptr(CollectiveError(description_ + ": " + e.what())));
    }
  }

  // Polls until done or `timeout`, then finishes the work.
  void complete(std::chrono::milliseconds timeout) {
    MPI_Status status;
    if (!poll(request_, Clock::now() + timeout, description_, &status)) {
      const std::string message =
          description_ + ": not finished after " + std::to_string(timeout.count()) + " ms";
      if (options_.abort_on_timeout) {
        abort_job(comm_, message);
      }
      {
        std::lock_guard<std::mutex> lock(mpi_mutex());
        if (!g_finalized) {
          MPI_Request_free(&request_);
        }
      }
      request_ = MPI_REQUEST_NULL;
      abandon({tensor_});
      throw CollectiveTimeoutError(message);
    }
    received(status);
    finish();
  }

  // After the request completed (MPI_Test set it to MPI_REQUEST_NULL).
  void received(const MPI_Status& status) {
    request_ = MPI_REQUEST_NULL;
    tensor_ = at::Tensor();
    if (bytes_ >= 0) {  // a receive: the sender's tensor must have had our size
      int received = 0;
      MPI_Get_count(&status, MPI_BYTE, &received);
      DTRAIN_CHECK_AS(CollectiveError, received == bytes_, description_, ": received ", received,
                      " bytes, expected ", bytes_,
                      " (the sender's tensor has a different size or dtype)");
    }
  }

  MPI_Request request_;
  at::Tensor tensor_;
  int64_t bytes_;  // expected bytes of a receive; -1 for a send
  MPI_Comm comm_;
  MpiOptions options_;
  std::mutex wait_mutex_;
};

}  // namespace

MpiOptions MpiOptions::from_env() {
  MpiOptions options;
  if (const char* abort = std::getenv("DTRAIN_MPI_ABORT_ON_TIMEOUT"); abort && *abort) {
    options.abort_on_timeout = std::string(abort) == "1";
  }
  return options;
}

int ProcessGroupMPI::world_rank() {
  ensure_mpi();
  std::lock_guard<std::mutex> lock(mpi_mutex());
  check_not_finalized("MPI_Comm_rank");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int ProcessGroupMPI::world_size() {
  ensure_mpi();
  std::lock_guard<std::mutex> lock(mpi_mutex());
  check_not_finalized("MPI_Comm_size");
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

struct ProcessGroupMPI::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MpiOptions options;
  ProcessGroup* group = nullptr;
  // The first collective that timed out; the group is unusable once set.
  std::string broken_by;
  // The collective the worker runs now, for Note [Which rank a timeout
  // waited on]: its number among the group's collectives and its op. The
  // worker thread's alone.
  std::int64_t seq = 0;
  std::string running_op;
  WorkQueue queue;

  // Queues collective `op`; `description` is describe(op).
  WorkPtr enqueue(const std::string& op, std::string description, std::function<void()> run) {
    return queue.enqueue(description, [this, op, description, run = std::move(run)] {
      ++seq;
      running_op = op;
      DTRAIN_CHECK_AS(CollectiveError, broken_by.empty(), description,
                      ": the group is unusable since an earlier collective timed out (", broken_by,
                      "); destroy it and end the job");
      run();
    });
  }

  // What a timeout of the running collective appends to its error: the
  // ranks that never reached it, when the group has a store to ask.
  std::string diagnosis(std::chrono::milliseconds timeout) const {
    if (!options.diagnosis_store) {
      return "";
    }
    return diagnose_timeout(options.diagnosis_store, group->name(), group->rank(),
                            group->global_ranks(), seq, running_op, diagnosis_grace(timeout));
  }

  std::chrono::milliseconds timeout_or_default(std::chrono::milliseconds timeout) const {
    return timeout.count() > 0 ? timeout : options.timeout;
  }

  // On the worker: posts a non-blocking collective (`post` returns MPI's
  // code) and polls it until done or `timeout`; `buffers` are what MPI
  // reads and writes (see Note [Abandoned buffers]).
  void complete(const std::string& what, std::chrono::milliseconds timeout,
                const std::function<int(MPI_Request*)>& post, std::vector<at::Tensor> buffers) {
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      check_not_finalized(what);
      mpi_check(post(&request), what, "posting the collective");
    }
    if (!poll(request, Clock::now() + timeout, what)) {
      const std::string message = what + ": not finished after " + std::to_string(timeout.count()) +
                                  " ms (a rank did not join, or joined a different collective)" +
                                  diagnosis(timeout);
      if (options.abort_on_timeout) {
        abort_job(comm, message);
      }
      broken_by = what;
      abandon(std::move(buffers));
      throw CollectiveTimeoutError(message);
    }
  }

  void start_worker() {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    queue.start();
  }
};

namespace {

int position_in(const std::vector<int>& world_ranks, const std::string& name) {
  const int me = ProcessGroupMPI::world_rank();
  const int world = ProcessGroupMPI::world_size();
  DTRAIN_CHECK(!world_ranks.empty(), "ProcessGroupMPI '", name, "': world_ranks is empty");
  for (std::size_t i = 0; i < world_ranks.size(); ++i) {
    DTRAIN_CHECK(world_ranks[i] >= 0 && world_ranks[i] < world, "ProcessGroupMPI '", name,
                 "': world rank ", world_ranks[i], " is outside the MPI world of size ", world);
    for (std::size_t j = 0; j < i; ++j) {
      DTRAIN_CHECK(world_ranks[j] != world_ranks[i], "ProcessGroupMPI '", name, "': world rank ",
                   world_ranks[i], " is listed twice");
    }
  }
  const auto it = std::find(world_ranks.begin(), world_ranks.end(), me);
  DTRAIN_CHECK(it != world_ranks.end(), "ProcessGroupMPI '", name, "': this process (world rank ",
               me, ") is not one of the group's world ranks");
  return static_cast<int>(it - world_ranks.begin());
}

// All members derive the same MPI_Comm_create_group tag from the group's name.
int tag_of(const std::string& name) {
  return static_cast<int>(std::hash<std::string>{}(name) % 32000);
}

}  // namespace

ProcessGroupMPI::ProcessGroupMPI(MpiOptions options, std::string name)
    : ProcessGroup(world_rank(), world_size(), std::move(name)), impl_(std::make_unique<Impl>()) {
  DTRAIN_CHECK(options.timeout.count() > 0, describe("creating the group"),
               ": timeout must be positive, got ", options.timeout.count(), " ms");
  impl_->options = options;
  impl_->group = this;
  // MPI_Comm_idup, polled, so a rank that never comes times out like a collective.
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(describe("creating the group"));
    mpi_check(MPI_Comm_idup(MPI_COMM_WORLD, &impl_->comm, &request), describe("creating the group"),
              "MPI_Comm_idup");
  }
  if (!poll(request, Clock::now() + options.timeout, describe("creating the group"))) {
    throw CollectiveTimeoutError(describe("creating the group") +
                                 ": not every rank joined within " +
                                 std::to_string(options.timeout.count()) + " ms");
  }
  impl_->start_worker();
  spdlog::debug("{}: ready", describe("mpi group"));
}

ProcessGroupMPI::ProcessGroupMPI(std::vector<int> world_ranks, MpiOptions options, std::string name)
    : ProcessGroup(position_in(world_ranks, name), static_cast<int>(world_ranks.size()),
                   std::move(name)),
      impl_(std::make_unique<Impl>()) {
  DTRAIN_CHECK(options.timeout.count() > 0, describe("creating the group"),
               ": timeout must be positive, got ", options.timeout.count(), " ms");
  impl_->options = options;
  impl_->group = this;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(describe("creating the group"));
    MPI_Group world_group = MPI_GROUP_NULL;
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &group);
    const int code =
        MPI_Comm_create_group(MPI_COMM_WORLD, group, tag_of(this->name()), &impl_->comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    mpi_check(code, describe("creating the group"), "MPI_Comm_create_group");
  }
  impl_->start_worker();
  spdlog::debug("{}: ready", describe("mpi group"));
}

ProcessGroupMPI::~ProcessGroupMPI() {
  impl_->queue.stop();  // finishes queued work first
  std::lock_guard<std::mutex> lock(mpi_mutex());
  // A broken group still has a collective in flight: leave its communicator be.
  if (!g_finalized && impl_->broken_by.empty() && impl_->comm != MPI_COMM_NULL) {
    MPI_Comm_free(&impl_->comm);  // pending sends and receives still complete
  }
}

namespace {

void check_cpu(const at::Tensor& tensor, const std::string& what) {
  DTRAIN_CHECK(tensor.defined(), what, ": the tensor is undefined");
  DTRAIN_CHECK(tensor.device().is_cpu(), what, ": backend mpi takes CPU tensors, got one on ",
               tensor.device().str(), " (use the nccl backend for CUDA tensors)");
  to_mpi(tensor.scalar_type());
  mpi_count(tensor.numel() * tensor.element_size(), what);
}

void check_tag(int tag, const std::string& what) {
  int* upper = nullptr;
  int found = 0;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
  }
  const int limit = found && upper ? *upper : 32767;
  DTRAIN_CHECK(tag >= 0 && tag <= limit, what, ": tag must be in 0..", limit, " (MPI_TAG_UB), got ",
               tag);
}

// MPI reads const input buffers through void*.
void* in_ptr(const at::Tensor& t) {
  return const_cast<void*>(t.const_data_ptr());
}

}  // namespace

WorkPtr ProcessGroupMPI::send(const at::Tensor& tensor, int dst, int tag) {
  const std::string what = describe("send to rank " + std::to_string(dst));
  check_cpu(tensor, what);
  check_peer(dst, rank(), size(), what);
  check_tag(tag, what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    mpi_check(MPI_Isend(in_ptr(tensor), static_cast<int>(tensor.nbytes()), MPI_BYTE, dst, tag,
                        impl_->comm, &request),
              what, "MPI_Isend");
  }
  return std::make_shared<RequestWork>(what, request, tensor, -1, impl_->comm, impl_->options);
}

WorkPtr ProcessGroupMPI::recv(at::Tensor& tensor, int src, int tag) {
  const std::string what = describe("recv from rank " + std::to_string(src));
  check_cpu(tensor, what);
  check_peer(src, rank(), size(), what);
  check_tag(tag, what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    mpi_check(MPI_Irecv(tensor.mutable_data_ptr(), static_cast<int>(tensor.nbytes()), MPI_BYTE, src,
                        tag, impl_->comm, &request),
              what, "MPI_Irecv");
  }
  return std::make_shared<RequestWork>(what, request, tensor, static_cast<int64_t>(tensor.nbytes()),
                                       impl_->comm, impl_->options);
}

WorkPtr ProcessGroupMPI::broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  const std::string op = "broadcast from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(tensor, what);
  check_root(options.root, size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, [this, what, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        return MPI_Ibcast(t.mutable_data_ptr(), static_cast<int>(t.numel()),
                                          to_mpi(t.scalar_type()), options.root, impl_->comm, r);
                      },
                      {t});
    });
  });
}

WorkPtr ProcessGroupMPI::all_reduce(at::Tensor& tensor, const AllreduceOptions& options) {
  const std::string op = "all_reduce(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  check_cpu(tensor, what);
  check_avg(options.op, tensor, what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, [this, what, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        return MPI_Iallreduce(MPI_IN_PLACE, t.mutable_data_ptr(),
                                              static_cast<int>(t.numel()), to_mpi(t.scalar_type()),
                                              to_mpi(options.op, t.scalar_type()), impl_->comm, r);
                      },
                      {t});
      if (options.op == ReduceOp::kAvg) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupMPI::reduce(at::Tensor& tensor, const ReduceOptions& options) {
  const std::string op =
      "reduce(" + to_string(options.op) + ") to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(tensor, what);
  check_root(options.root, size(), what);
  check_avg(options.op, tensor, what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  const bool is_root = rank() == options.root;
  return impl_->enqueue(op, what, [this, what, tensor, options, timeout, is_root]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        // The root reduces in place; the others only send theirs.
                        return MPI_Ireduce(is_root ? MPI_IN_PLACE : in_ptr(t),
                                           is_root ? t.mutable_data_ptr() : nullptr,
                                           static_cast<int>(t.numel()), to_mpi(t.scalar_type()),
                                           to_mpi(options.op, t.scalar_type()), options.root,
                                           impl_->comm, r);
                      },
                      {t});
      if (options.op == ReduceOp::kAvg && is_root) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupMPI::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                    const CollectiveOptions& options) {
  const std::string op = "all_gather";
  const std::string what = describe(op);
  check_cpu(input, what);
  check_one_per_rank(outputs, input, size(), what, "outputs");
  mpi_count(input.numel() * size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(
      op, what, [this, what, outputs, input = input.contiguous(), timeout]() mutable {
        at::Tensor flat = at::empty({input.numel() * size()}, input.options());
        impl_->complete(what, timeout,
                        [&](MPI_Request* r) {
                          const auto type = to_mpi(input.scalar_type());
                          const int count = static_cast<int>(input.numel());
                          return MPI_Iallgather(in_ptr(input), count, type, flat.mutable_data_ptr(),
                                                count, type, impl_->comm, r);
                        },
                        {input, flat});
        split_into(flat, outputs);
      });
}

WorkPtr ProcessGroupMPI::gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                const RootOptions& options) {
  const std::string op = "gather to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(input, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  if (is_root) {
    check_one_per_rank(outputs, input, size(), what, "outputs");
    mpi_count(input.numel() * size(), what);
  }
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(
      op, what,
      [this, what, outputs, input = input.contiguous(), options, timeout, is_root]() mutable {
        at::Tensor flat =
            is_root ? at::empty({input.numel() * size()}, input.options()) : at::empty({0});
        impl_->complete(what, timeout,
                        [&](MPI_Request* r) {
                          const auto type = to_mpi(input.scalar_type());
                          const int count = static_cast<int>(input.numel());
                          return MPI_Igather(in_ptr(input), count, type,
                                             is_root ? flat.mutable_data_ptr() : nullptr, count,
                                             type, options.root, impl_->comm, r);
                        },
                        {input, flat});
        if (is_root) {
          split_into(flat, outputs);
        }
      });
}

WorkPtr ProcessGroupMPI::scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                 const RootOptions& options) {
  const std::string op = "scatter from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(output, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  if (is_root) {
    check_one_per_rank(inputs, output, size(), what, "inputs");
    mpi_count(output.numel() * size(), what);
  }
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat = is_root ? flat_cat(inputs) : at::empty({0});
  return impl_->enqueue(op, what, [this, what, output, flat, options, timeout, is_root]() mutable {
    on_contiguous(output, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        const auto type = to_mpi(t.scalar_type());
                        const int count = static_cast<int>(t.numel());
                        return MPI_Iscatter(is_root ? in_ptr(flat) : nullptr, count, type,
                                            t.mutable_data_ptr(), count, type, options.root,
                                            impl_->comm, r);
                      },
                      {t, flat});
    });
  });
}

WorkPtr ProcessGroupMPI::reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                        const AllreduceOptions& options) {
  const std::string op = "reduce_scatter(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  check_cpu(output, what);
  check_avg(options.op, output, what);
  check_one_per_rank(inputs, output, size(), what, "inputs");
  mpi_count(output.numel() * size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat = flat_cat(inputs);
  return impl_->enqueue(op, what, [this, what, output, flat, options, timeout]() mutable {
    on_contiguous(output, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        return MPI_Ireduce_scatter_block(
                            in_ptr(flat), t.mutable_data_ptr(), static_cast<int>(t.numel()),
                            to_mpi(t.scalar_type()), to_mpi(options.op, t.scalar_type()),
                            impl_->comm, r);
                      },
                      {t, flat});
      if (options.op == ReduceOp::kAvg) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupMPI::all_to_all(std::vector<at::Tensor>& outputs,
                                    const std::vector<at::Tensor>& inputs,
                                    const CollectiveOptions& options) {
  const std::string op = "all_to_all";
  const std::string what = describe(op);
  check_count(inputs, size(), what, "inputs");
  check_count(outputs, size(), what, "outputs");
  for (int i = 0; i < size(); ++i) {
    check_cpu(inputs[i], what);
    check_same(inputs[0], inputs[i], what);
    check_same(inputs[0], outputs[i], what);
  }
  mpi_count(inputs[0].numel() * size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat_in = flat_cat(inputs);
  return impl_->enqueue(op, what, [this, what, outputs, flat_in, timeout]() mutable {
    at::Tensor flat_out = at::empty_like(flat_in);
    impl_->complete(what, timeout,
                    [&](MPI_Request* r) {
                      const auto type = to_mpi(flat_in.scalar_type());
                      const int count = static_cast<int>(flat_in.numel() / size());
                      return MPI_Ialltoall(in_ptr(flat_in), count, type,
                                           flat_out.mutable_data_ptr(), count, type, impl_->comm,
                                           r);
                    },
                    {flat_in, flat_out});
    split_into(flat_out, outputs);
  });
}

WorkPtr ProcessGroupMPI::barrier(const CollectiveOptions& options) {
  const std::string op = "barrier";
  const std::string what = describe(op);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, [this, what, timeout] {
    impl_->complete(what, timeout, [&](MPI_Request* r) { return MPI_Ibarrier(impl_->comm, r); },
                    {});
  });
}

// ---- init.cpp's entry points (mpi_backend.h) ----

void check_mpi_world(int rank, int world_size) {
  const int mpi_rank = ProcessGroupMPI::world_rank();
  const int mpi_size = ProcessGroupMPI::world_size();
  DTRAIN_CHECK(
      rank == mpi_rank && world_size == mpi_size, "init_process_group: backend mpi: MPI says this ",
      "process is rank ", mpi_rank, " of ", mpi_size, ", but rank ", rank, " and world size ",
      world_size, " were given (InitOptions, or RANK/WORLD_SIZE/OMPI_COMM_WORLD_* in the ",
      "environment); start the program with mpirun -np ", world_size,
      " and leave rank and world_size at -1",
      mpi_size == 1 ? " (MPI sees a world of 1: was the program started without mpirun?)" : "");
}

ProcessGroupPtr make_mpi_group(const std::shared_ptr<Store>& store, int rank, int size,
                               std::chrono::milliseconds timeout, const std::string& name) {
  MpiOptions options = MpiOptions::from_env();
  options.timeout = timeout;
  if (store) {
    options.diagnosis_store = std::make_shared<PrefixStore>("mpi/" + name, store);
  }
  if (size == ProcessGroupMPI::world_size()) {
    check_mpi_world(rank, size);
    return std::make_shared<ProcessGroupMPI>(options, name);
  }
  // A sub-group: its members learn each other's MPI_COMM_WORLD ranks through the store.
  PrefixStore group_store("mpi/" + name, store);
  group_store.set("world_rank/" + std::to_string(rank),
                  std::to_string(ProcessGroupMPI::world_rank()));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) {
    keys.push_back("world_rank/" + std::to_string(r));
  }
  try {
    group_store.wait(keys, timeout);
  } catch (const StoreTimeoutError& e) {
    throw CollectiveTimeoutError("new_group '" + name + "' (mpi): not all " + std::to_string(size) +
                                 " members arrived within " + std::to_string(timeout.count()) +
                                 " ms: " + e.what());
  }
  std::vector<int> world_ranks;
  for (const auto& key : keys) {
    world_ranks.push_back(std::stoi(group_store.get_string(key)));
  }
  return std::make_shared<ProcessGroupMPI>(std::move(world_ranks), options, name);
}

}  // namespace dtrain::dist
