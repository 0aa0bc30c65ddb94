#include "mpi_request_work.h"

#include <mutex>

#include "dtrain/util/errors.h"

namespace dtrain::dist::mpi {

namespace {

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
    if (request_ != MPI_REQUEST_NULL && !finalized()) {
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
        abort_job(comm_, message, kAbortOnTimeout);
      }
      {
        std::lock_guard<std::mutex> lock(mpi_mutex());
        if (!finalized()) {
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

WorkPtr make_request_work(std::string description, MPI_Request request, at::Tensor tensor,
                          int64_t expected_bytes, MPI_Comm comm, const MpiOptions& options) {
  return std::make_shared<RequestWork>(std::move(description), request, std::move(tensor),
                                       expected_bytes, comm, options);
}

}  // namespace dtrain::dist::mpi
