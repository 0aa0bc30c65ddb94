// The mpi backend's isend/irecv work may be polled: is_completed() tests
// its request (MPI progresses only inside MPI calls), as torch's MPI work
// does, so a loop on is_completed() ends without a wait(). Not a gtest:
// run by test_mpi_run.sh under mpirun with 2 ranks; exits non-zero when a
// check fails.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "dtrain/dist/init.h"
#include "dtrain/util/process_setup.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using Clock = std::chrono::steady_clock;

int g_rank = -1;
int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::cerr << "rank " << g_rank << ": " << what << std::endl;
  }
}

// Polls `work` without waiting on it; false when it is still running after
// 15 s (the group's own timeout is 30 s: a test that never completes must
// not end as a timeout raised by wait()).
bool poll_until_completed(const dist::WorkPtr& work, const std::string& what) {
  const auto deadline = Clock::now() + 15s;
  while (!work->is_completed()) {
    if (Clock::now() > deadline) {
      check(false, what + ": is_completed() still false after 15 s of polling");
      return false;
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The error of a completed work, or "" when it succeeded.
std::string error_of(const dist::WorkPtr& work) {
  try {
    if (work->exception()) {
      std::rethrow_exception(work->exception());
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Rank 1 posts a receive, sees it incomplete, then tells rank 0 to send;
// both poll their work to completion. Then a receive of the wrong size
// completes by polling too, with its error.
void polled_point_to_point(int rank) {
  const at::Tensor sent = at::arange(8, at::kLong) * 3;
  if (rank == 0) {
    at::Tensor go = at::empty({1});
    dist::recv(go, 1, nullptr, /*tag=*/1);
    auto sending = dist::isend(sent, 1, nullptr, /*tag=*/2);
    if (poll_until_completed(sending, "isend")) {
      check(error_of(sending).empty(), "isend failed: " + error_of(sending));
    }
    dist::send(at::ones({3}), 1, nullptr, /*tag=*/3);
  } else if (rank == 1) {
    at::Tensor in = at::zeros({8}, at::kLong);
    auto receiving = dist::irecv(in, 0, nullptr, /*tag=*/2);
    check(!receiving->is_completed(), "irecv completed before anything was sent");
    dist::send(at::ones({1}), 0, nullptr, /*tag=*/1);
    if (poll_until_completed(receiving, "irecv")) {
      check(error_of(receiving).empty(), "irecv failed: " + error_of(receiving));
      check(at::equal(in, sent), "irecv received other values than were sent");
      receiving->wait();  // done: returns at once
    }
    at::Tensor bigger = at::empty({4});
    auto mismatched = dist::irecv(bigger, 0, nullptr, /*tag=*/3);
    if (poll_until_completed(mismatched, "irecv of the wrong size")) {
      const std::string expected = "received 12 bytes, expected 16";
      check(error_of(mismatched).find(expected) != std::string::npos,
            "the wrong size's error lacks '" + expected + "': '" + error_of(mismatched) + "'");
      try {
        mismatched->wait();
        check(false, "wait() on the failed irecv returned");
      } catch (const dist::CollectiveError& e) {
        check(std::string(e.what()).find(expected) != std::string::npos,
              std::string("wait() raised another error: ") + e.what());
      }
    }
  }
}

}  // namespace

int main() {
  dtrain::util::set_up_process();
  const char* launch_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (launch_rank == nullptr) {
    std::cerr << "run me under mpirun (OMPI_COMM_WORLD_RANK is unset)\n";
    return 2;
  }
  g_rank = std::atoi(launch_rank);
  dist::init_process_group({.backend = "mpi", .timeout = 30s});
  try {
    polled_point_to_point(g_rank);
    dist::barrier();
  } catch (const std::exception& e) {
    std::cerr << "rank " << g_rank << ": raised: " << e.what() << std::endl;
    return 1;  // the peer may now wait on this rank; mpirun ends it
  }
  dist::destroy_process_group();
  std::cout << "rank " << g_rank << ": " << (g_failures == 0 ? "ok" : "FAILED") << std::endl;
  return g_failures == 0 ? 0 : 1;
}
