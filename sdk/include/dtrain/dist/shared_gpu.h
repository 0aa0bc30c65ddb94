// Several ranks of one machine on one GPU over NCCL, for checking
// multi-rank code where there is a single GPU (dtrun --share-gpu, or
// DTRAIN_SHARE_GPU=1 with any launcher; dtrain's GPU tests use it too).
//
// NCCL refuses two ranks of one host on one GPU ("Duplicate GPU detected").
// It tells hosts apart by a hash of NCCL_HOSTID when that is set, so each
// sharing rank gets a host id of its own, and NCCL carries the traffic over
// loopback sockets, as it would between machines: slow, and meant for
// correctness, never for speed. init_process_group applies the variables
// for the nccl backend when LaunchEnv::share_gpu is set; it must happen
// before NCCL's first call in the process, which reads them once.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dtrain::dist {

// The NCCL variables that make global rank `rank` a host of its own, as
// (name, value) pairs: its own NCCL_HOSTID, sockets on the loopback
// interface, no InfiniBand and no NVLink multi-node or NVLS paths.
std::vector<std::pair<std::string, std::string>> shared_gpu_nccl_variables(int rank);

// Sets them in this process's environment. NCCL_HOSTID is always set (a
// shared one would bring the refusal back); every other variable the user
// already set is kept. Not thread-safe (setenv): call before other threads
// read the environment, as init_process_group does.
void use_shared_gpu_nccl_variables(int rank);

}  // namespace dtrain::dist
