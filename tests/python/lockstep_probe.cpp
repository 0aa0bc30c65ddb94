// A lockstep participant that only records its turns, for
// tests/python/test_lockstep.py, which runs it beside participants using the
// Python twin (benchmarks/support/lockstep.h, benchmarks/peers/lockstep.py).
//
//   lockstep_probe DIR:NAME ROUNDS LOG [TIMEOUT_S]
//
// Appends "NAME ROUND" to LOG on each turn. Exits 1 with the error on stderr.
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "dtrain/util/process_setup.h"
#include "lockstep.h"

int main(int argc, char** argv) {
  // dtrain's logging and crash traces; malloc keeps glibc's settings.
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  if (argc < 4) {
    std::fprintf(stderr, "usage: lockstep_probe DIR:NAME ROUNDS LOG [TIMEOUT_S]\n");
    return 2;
  }
  try {
    const std::string spec = argv[1];
    const int rounds = std::stoi(argv[2]);
    const std::chrono::seconds timeout(argc > 4 ? std::stoi(argv[4]) : 60);
    dtrain::bench::Lockstep lockstep(spec, /*rank=*/0, timeout);
    const std::string name = spec.substr(spec.rfind(':') + 1);
    for (int round = 0; round < rounds; ++round) {
      lockstep.wait_turn(round);
      std::ofstream(argv[3], std::ios::app) << name << ' ' << round << '\n';
      lockstep.pass_turn(round);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
