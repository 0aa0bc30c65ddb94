// One conformance suite for every backend of dtrain::dist: the checks of
// each collective, reduce op and dtype, sub-groups, point-to-point in and
// out of order, zero-element and non-contiguous tensors, async work and
// bad inputs, written once. Each backend's test program runs every case on
// a default group of its own making: test_gloo_collectives.cpp forks Gloo
// ranks per case, test_mpi_collectives.cpp runs them in turn under mpirun.
//
// A case is called on every rank of the default group at once, uses
// GoogleTest assertions (each rank is a process that reports its own), and
// ends with the group idle, so the next case can follow on the same group.
// Timeouts and their recovery differ by backend and stay in each backend's
// own tests.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace dtrain::testing {

// Where a case runs: this process's rank in a default group of `world`
// ranks on `backend` ("gloo", "mpi").
struct CollectiveWorld {
  int rank = 0;
  int world = 0;
  std::string backend;
};

struct CollectiveCase {
  std::string name;  // a GoogleTest name: RootedCollectivesFromEveryRoot
  int min_world = 2;
  void (*run)(const CollectiveWorld&) = nullptr;
};

// How GoogleTest shows a case given as a test parameter.
inline void PrintTo(const CollectiveCase& conformance_case, std::ostream* out) {
  *out << conformance_case.name;
}

// Every case, in the order a backend's program runs them.
const std::vector<CollectiveCase>& collective_conformance_cases();

}  // namespace dtrain::testing
