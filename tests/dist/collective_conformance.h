// One conformance suite for every backend of dtrain::dist: the checks of
// each collective, reduce op and dtype, sub-groups, point-to-point in and
// out of order, zero-element and non-contiguous tensors, async work and
// bad inputs, written once. Each backend's test program runs every case on
// a default group of its own making: test_gloo_collectives.cpp forks Gloo
// ranks per case, test_mpi_collectives.cpp runs them in turn under mpirun,
// gpu/test_nccl_conformance.cpp forks NCCL ranks that share one GPU.
//
// A case is called on every rank of the default group at once, uses
// GoogleTest assertions (each rank is a process that reports its own), and
// ends with the group idle, so the next case can follow on the same group.
// Timeouts and their recovery differ by backend and stay in each backend's
// own tests.
#pragma once

#include <c10/core/Device.h>

#include <ostream>
#include <string>
#include <vector>

namespace dtrain::testing {

// Where a case runs: this process's rank in a default group of `world`
// ranks on `backend` ("gloo", "mpi", "nccl"), whose tensors live on
// `device` (the CPU; NCCL: the rank's GPU).
struct CollectiveWorld {
  int rank = 0;
  int world = 0;
  std::string backend;
  c10::Device device = c10::kCPU;
};

struct CollectiveCase {
  std::string name;  // a GoogleTest name: RootedCollectivesFromEveryRoot
  int min_world = 2;
  void (*run)(const CollectiveWorld&) = nullptr;
  // Why the case does not apply to NCCL; empty where it does.
  std::string not_on_nccl;
};

// How GoogleTest shows a case given as a test parameter.
inline void PrintTo(const CollectiveCase& conformance_case, std::ostream* out) {
  *out << conformance_case.name;
}

// Every case, in the order a backend's program runs them.
const std::vector<CollectiveCase>& collective_conformance_cases();

// The cases that apply to `backend` at world size `world`, in that order.
std::vector<CollectiveCase> conformance_cases_for(const std::string& backend, int world);

}  // namespace dtrain::testing
