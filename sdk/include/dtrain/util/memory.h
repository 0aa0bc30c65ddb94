// Host memory of this process: how much it holds, for reports, and the
// allocator policy for training (Note [Freed host memory stays with the process]).
#pragma once

#include <cstdint>

namespace dtrain::util {

// Peak resident set size of this process since it started, in bytes (getrusage).
std::int64_t peak_rss_bytes();

// Current resident set size in bytes (/proc/self/statm); 0 where unavailable.
std::int64_t current_rss_bytes();

// Note [Freed host memory stays with the process]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A training step frees and allocates the same activations and gradients
// every step. glibc's defaults hand some of that memory back to the kernel
// each time (blocks above an adaptive mmap threshold are fresh mappings,
// and a free heap top above the trim threshold is released), so the next
// step takes page faults and the kernel zeroes those pages again: 456
// faults per step in a toy-CNN DDP step, 8-11 thousand in a PointMLP step,
// which spent 10-11% of its time in the kernel. Like PyTorch's CUDA caching
// allocator, dtrain keeps freed memory in the process instead: every block
// comes from the heap, none is a mapping of its own (M_MMAP_MAX 0), and up
// to 1 GiB of free heap stays mapped. Raising the mmap threshold alone
// stops at glibc's maximum, 32 MiB: PointNet++ ssg's activations at batch
// 8 x 1024 points are 67 MB each, and with them mapped afresh every step a
// CPU step took 738-762 ms against 391-429 ms from the heap (msg at
// 8 x 1024: 2.6 s against 3.3 s with glibc's defaults). The resident size
// stays near the peak of a step, which a training process reaches every
// step anyway, plus what the heap cannot reuse: that ssg step's peak was
// 1413-1418 MB against 987-989 MB (msg: 3.5 GB against 2.8 GB with glibc's
// defaults).
//
// A choice of the program, not of the library (Note [Nothing happens on
// load]): util::set_up_process applies it (process_setup.h), and the
// training apps once their data is loaded, before they start training.
// Applied once per process; DTRAIN_HOST_MEMORY=release keeps glibc's
// defaults (retain, the default, or any other value warns and retains).
// Returns whether the policy is in force.
bool retain_freed_host_memory();

}  // namespace dtrain::util
