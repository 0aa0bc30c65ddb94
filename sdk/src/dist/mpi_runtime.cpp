#include "mpi_runtime.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/util/errors.h"
#include "mpi_schedule.h"

namespace dtrain::dist::mpi {

namespace {

// Set under mpi_mutex() by the exit handler.
bool g_finalized = false;

// float16 and bfloat16: two-byte datatypes with dtrain's reductions.
MPI_Datatype g_half_type = MPI_DATATYPE_NULL;
MPI_Datatype g_bfloat16_type = MPI_DATATYPE_NULL;
MPI_Op g_half_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum prod min max

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
    close_iallreduce_schedule();
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

}  // namespace

std::mutex& mpi_mutex() {
  static std::mutex mutex;
  return mutex;
}

bool finalized() {
  return g_finalized;
}

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
    open_iallreduce_schedule();
  });
}

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

void check_not_finalized(const std::string& what) {
  DTRAIN_CHECK_AS(CollectiveError, !g_finalized, what,
                  ": MPI was already finalized (the process is exiting)");
}

MPI_Datatype to_mpi(at::ScalarType type) {
  return detail::by_dtype<MPI_Datatype>(
      type,
      {MPI_FLOAT, MPI_DOUBLE, g_half_type, g_bfloat16_type, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T},
      "mpi");
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

bool poll(MPI_Request& request, Clock::time_point deadline, const std::string& what,
          MPI_Status* status, const std::function<Pace()>& pace) {
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
    if (pace() == Pace::kSpin) {
      continue;
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

void abandon(std::vector<at::Tensor> tensors) {
  static std::mutex mutex;
  static auto* kept = new std::vector<at::Tensor>();  // never freed, on purpose
  std::lock_guard<std::mutex> lock(mutex);
  for (auto& t : tensors) {
    kept->push_back(std::move(t));
  }
}

void abort_job(MPI_Comm comm, const std::string& message, const char* why) {
  spdlog::critical("{}; aborting the MPI job ({})", message, why);
  MPI_Abort(comm, 1);
  std::abort();  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

}  // namespace dtrain::dist::mpi
