// MPI itself as dtrain's MPI code uses it: starting and finishing it once
// per process, the lock every call is made under, error checks, dtype and
// reduce-op mappings, and polling a request against a deadline. Shared by
// the mpi backend (process_group_mpi.cpp, mpi_request_work.cpp) and the
// store's address through MPI (mpi_store_address.cpp).
#pragma once

// Only MPI's C API is used; keep OpenMPI's deprecated C++ bindings out.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "dtrain/dist/types.h"

namespace dtrain::dist::mpi {

using Clock = std::chrono::steady_clock;

// Note [One MPI call at a time]
// dtrain asks for MPI_THREAD_SERIALIZED (it accepts more) and makes every
// MPI call -- posting, MPI_Test, communicator setup -- while holding
// mpi_mutex(). Workers of different groups and threads waiting on send/recv
// Works thus take turns; nobody holds the lock while waiting, they poll
// with MPI_Test, which is also what drives MPI's progress. The only blocking
// call under the lock is MPI_Comm_create_group, whose members first meet in
// the store, so it does not wait long.
std::mutex& mpi_mutex();

// True once the exit handler finalized MPI; no MPI call may follow. Read
// with mpi_mutex() held.
bool finalized();

// Initialises MPI once per process (unless the program did) and creates
// dtrain's datatypes and ops for float16 and bfloat16. Thread-safe.
void ensure_mpi();

// Throws CollectiveError "<what>: <call> failed: <MPI's text>" unless `code`
// is MPI_SUCCESS.
void mpi_check(int code, const std::string& what, const char* call);
std::string mpi_error_text(int code);

// Call with mpi_mutex() held: throws CollectiveError when MPI was finalized.
void check_not_finalized(const std::string& what);

// The MPI datatype of `type`; throws dtrain::Error naming the dtypes the
// backend takes.
MPI_Datatype to_mpi(at::ScalarType type);
// The MPI op of `op` on elements of `type` (dtrain's own for 2-byte floats).
MPI_Op to_mpi(ReduceOp op, at::ScalarType type);

// `count` as MPI's int; throws dtrain::Error when it does not fit.
int mpi_count(int64_t count, const std::string& what);

// A receive whose message was larger than its tensor (MPI_ERR_TRUNCATE),
// thrown by poll(): the receive's work says so in the words of the smaller case.
class TruncatedReceive : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

// How poll() waits between two tests of a request. MPI's non-blocking
// collectives progress only inside MPI calls, so every pause stalls them.
enum class Pace {
  // Test without pause, as MPI's blocking calls do: while a thread has
  // nothing to do but wait for this request.
  kSpin,
  // Yield for the first 5 ms, then sleep with back-off up to 1 ms: while
  // the program computes and nobody waits for it.
  kBackOff,
};

// Tests `request` (each test under mpi_mutex()) until it completes (true) or
// `deadline` passes (false), asking `pace` before each pause. Throws
// CollectiveError when MPI reports an error, TruncatedReceive for a message
// larger than its receive.
bool poll(
    MPI_Request& request, Clock::time_point deadline, const std::string& what,
    MPI_Status* status = MPI_STATUS_IGNORE,
    const std::function<Pace()>& pace = [] { return Pace::kBackOff; });

// Note [Abandoned buffers]
// A request that timed out is still owned by MPI: a collective cannot be
// cancelled and a send may still read its buffer. Its tensors are kept for
// the rest of the process so MPI never writes into freed memory.
void abandon(std::vector<at::Tensor> tensors);

// Logs `message` and ends the whole MPI job; `why` says why it must
// ("MpiOptions::abort_on_timeout").
[[noreturn]] void abort_job(MPI_Comm comm, const std::string& message, const char* why);
inline constexpr const char* kAbortOnTimeout = "MpiOptions::abort_on_timeout";

}  // namespace dtrain::dist::mpi
