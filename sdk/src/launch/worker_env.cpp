#include "dtrain/launch/worker_env.h"

#include <unistd.h>

#include "dtrain/util/launch_env.h"

extern char** environ;

namespace dtrain::launch {

Environment worker_environment(const Environment& base, const WorkerPlace& place,
                               const RoundFacts& round) {
  Environment env = base;
  env["RANK"] = std::to_string(place.rank);
  env["LOCAL_RANK"] = std::to_string(place.local_rank);
  env["GROUP_RANK"] = std::to_string(place.group_rank);
  env["ROLE_RANK"] = std::to_string(place.rank);
  env["ROLE_NAME"] = round.role;
  env["WORLD_SIZE"] = std::to_string(place.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(place.local_world_size);
  env["ROLE_WORLD_SIZE"] = std::to_string(place.world_size);
  env["GROUP_WORLD_SIZE"] = std::to_string(place.group_world_size);
  env["MASTER_ADDR"] = round.master_addr;
  env["MASTER_PORT"] = std::to_string(round.master_port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(round.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(round.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = round.run_id;
  // Rank 0 of the workers hosts their store (not the launcher), so Python
  // programs' own TCPStore works under dtrun as under torchrun.
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  env["DTRUN_RESTART_COUNT"] = std::to_string(round.restart_count);
  env["DTRUN_RUN_ID"] = round.run_id;
  if (place.local_world_size > 1 && env.find("OMP_NUM_THREADS") == env.end()) {
    env["OMP_NUM_THREADS"] = "1";
  }
  if (!round.records.host.empty()) {
    env[store::kRecordsHostVariable] = round.records.host;
    env[store::kRecordsPortVariable] = std::to_string(round.records.port);
    env[store::kRecordsPrefixVariable] = round.records.prefix;
  }
  if (!round.flight_recorder_dir.empty()) {
    env["DTRAIN_FLIGHT_RECORDER_DIR"] = round.flight_recorder_dir;
  }
  if (round.share_gpu) {
    env[util::kShareGpuVariable] = "1";
  }
  if (!round.bind_devices.empty()) {
    env["CUDA_VISIBLE_DEVICES"] =
        round.bind_devices[static_cast<std::size_t>(place.local_rank) % round.bind_devices.size()];
  }
  return env;
}

Environment current_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const auto equals = text.find('=');
    if (equals != std::string::npos) {
      env.emplace(text.substr(0, equals), text.substr(equals + 1));
    }
  }
  return env;
}

std::vector<std::string> to_envp(const Environment& env) {
  std::vector<std::string> envp;
  envp.reserve(env.size());
  for (const auto& [key, value] : env) {
    envp.push_back(key + "=" + value);
  }
  return envp;
}

}  // namespace dtrain::launch
