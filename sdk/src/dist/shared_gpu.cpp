#include "dtrain/dist/shared_gpu.h"

#include <unistd.h>

#include <array>
#include <cstdlib>

#include <spdlog/spdlog.h>

namespace dtrain::dist {

namespace {

// This machine's name, so that ranks of two machines that each share a GPU
// still get different host ids.
std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) {
    return "localhost";
  }
  return name.data();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> shared_gpu_nccl_variables(int rank) {
  return {
      {"NCCL_HOSTID", host_name() + "/dtrain-shared-gpu-rank-" + std::to_string(rank)},
      // NCCL skips the loopback interface unless told to use it.
      {"NCCL_SOCKET_IFNAME", "lo"},
      {"NCCL_IB_DISABLE", "1"},
      // Paths between GPUs of one NVLink domain: there is one GPU.
      {"NCCL_NVLS_ENABLE", "0"},
      {"NCCL_MNNVL_ENABLE", "0"},
  };
}

void use_shared_gpu_nccl_variables(int rank) {
  for (const auto& [name, value] : shared_gpu_nccl_variables(rank)) {
    const char* before = std::getenv(name.c_str());
    const bool keep = name != "NCCL_HOSTID" && before != nullptr && *before != '\0';
    if (keep) {
      spdlog::info("shared GPU: keeping {}={} (set before; dtrain would set {})", name, before,
                   value);
      continue;
    }
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  spdlog::debug("shared GPU: rank {} is NCCL host '{}'", rank, std::getenv("NCCL_HOSTID"));
}

}  // namespace dtrain::dist
