// Options of DistributedDataParallel, with PyTorch DDP's names and defaults.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dtrain::ddp {

class CommHook;

// How the bucket sums are turned into the gradient every rank applies.
enum class GradientAveraging {
  // Divide by the world size: exact when every rank processes the same
  // number of samples (PyTorch's behaviour).
  kWorld,
  // Weight each rank's gradient by the samples it processed this step and
  // divide by the global sample count: the exact gradient of the global
  // batch even when ranks process different batch sizes (mixed hardware,
  // the last uneven batch). Costs one 8-byte all-reduce per step.
  kSampleCount,
};

struct DdpOptions {
  // Size cap of every bucket but the first, in MiB.
  double bucket_cap_mb = 25.0;
  // Cap of the first bucket (the last layers' gradients), kept small so the
  // first all-reduce starts early in backward. Never more than half of the
  // model's gradient bytes, so a small model still gets two buckets and its
  // first all-reduce overlaps the rest of backward.
  double first_bucket_mb = 1.0;
  // Broadcast rank 0's buffers (batch-norm statistics) before each training forward.
  bool broadcast_buffers = true;
  // Search the autograd graph after every forward for parameters that will
  // get no gradient, so their buckets still complete. Costs a graph walk.
  bool find_unused_parameters = false;
  // Make each parameter's .grad a view into its bucket's flat buffer, which
  // saves one copy and the memory of a second gradient.
  bool gradient_as_bucket_view = false;
  // The set of used parameters never changes: it is found once, in the
  // first iteration, and reused without walking the graph again.
  bool static_graph = false;
  GradientAveraging averaging = GradientAveraging::kWorld;
  // How buckets are reduced; nullptr = plain all-reduce (comm_hook.h).
  std::shared_ptr<CommHook> comm_hook{};
  // Record a per-step timeline of backward and bucket communication (timeline.h).
  bool record_timeline = false;
};

}  // namespace dtrain::ddp
