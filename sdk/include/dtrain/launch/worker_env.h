// The environment a worker starts with, as torchrun sets it, so programs
// written for torchrun (and dtrain's own init_process_group) find their
// place in the job: RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, the restart count and run id.
//
// A pure function of its inputs, so it is tested without starting anything.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtrain/store/job_records.h"

namespace dtrain::launch {

using Environment = std::map<std::string, std::string>;

// Where one worker sits in the current round.
struct WorkerPlace {
  int rank = 0;
  int local_rank = 0;
  int group_rank = 0;  // the node's rank in this round
  int world_size = 1;
  int local_world_size = 1;
  int group_world_size = 1;  // nodes in this round
};

// What every worker of a round shares.
struct RoundFacts {
  std::string master_addr;
  std::uint16_t master_port = 0;
  int restart_count = 0;
  int max_restarts = 0;
  std::string run_id;
  std::string role = "default";  // ROLE_NAME
  // When non-empty, the worker sees only devices[local_rank % size].
  std::vector<std::string> bind_devices;
  // Sets DTRAIN_SHARE_GPU=1 (LaunchOptions::share_gpu).
  bool share_gpu = false;
  // Where the workers leave their records (dtrain/store/job_records.h):
  // the agents' store and the round's prefix; none when host is empty.
  store::RecordsLocation records;
  // Where the workers write their flight recorders' dumps
  // (DTRAIN_FLIGHT_RECORDER_DIR); unset when empty.
  std::string flight_recorder_dir;
};

// `base` (normally the launcher's own environment) with the worker's
// variables set. OMP_NUM_THREADS becomes 1 when several workers share the
// node and base does not set it, so they do not oversubscribe its cores.
Environment worker_environment(const Environment& base, const WorkerPlace& place,
                               const RoundFacts& round);

// This process's environment as a map.
Environment current_environment();

// "KEY=VALUE" strings, as execve takes them.
std::vector<std::string> to_envp(const Environment& env);

}  // namespace dtrain::launch
