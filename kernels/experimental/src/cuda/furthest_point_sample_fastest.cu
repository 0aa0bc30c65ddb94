// The experimental measured plan (ExperimentalFps::kMeasured): for clouds
// up to 8192 points, the kernel setting chosen by timing the candidates on
// the first input of each kind (Note [Choosing the CUDA FPS kernel by
// timing it]).
//
// Note [Choosing the CUDA FPS kernel by timing it]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Up to 8192 points several kernels hold a cloud on chip (the register
// kernel with a pass or a tree for a thread's furthest point and one, two
// or four picks a round; the leader kernel on 1024 or 512 threads, one, two
// or four picks a round). Every one of them takes the picks of sequential
// FPS, ties to the lowest index, so the CPU kernel's: they differ in speed
// only, and which is fastest depends on the GPU (its clock, its schedulers,
// its shared memory), on N (points a thread) and on B against the SM count.
// A table written from one GPU's measurements would be wrong on the next,
// so the plan measures instead, as cuDNN's benchmark mode does, and unlike
// cuDNN can do it always: no choice changes a result.
//
// The kind of an input is its device and B, N and npoint each rounded up to
// a power of two: a training run's set abstractions give a few kinds, each
// measured once, and clouds of varying size share their kind's choice. On
// the first input of a kind, on the caller's stream, each candidate runs
// once untimed (its first launch may load its module), then three times in
// turn, timed by CUDA events around the launch alone; the one with the
// shortest run is remembered (FastestChoice, src/fastest_choice.h) and runs
// on every input of the kind, this one included. That first call waits for
// the stream, once per kind: at the benchmark's goal size (B = 32, N = 8192
// -> 1024) about 30 runs of about a millisecond.
//
// A stream being captured into a CUDA graph cannot be waited for: there the
// kind's remembered choice runs, or, before any, the first candidate (the
// register kernel, the choice before measuring). Run one step before
// capturing, as graph capture needs anyway, and the graph holds the
// fastest. fps_fastest_measurements() tells what was measured; the
// benchmark prints it.
//
// "No choice changes a result" is checked, not assumed: after each
// candidate's untimed run its picks are copied back and compared with the
// first candidate's (the register kernel, the choice before measuring), and
// a candidate whose picks differ is left out of the timing and of the
// choice, and marked in fps_fastest_measurements(). A fault in one kernel on
// some GPU then costs its speed, not the caller's picks; the GPU tests fail
// on such a mark. The copies cost one B x npoint transfer per candidate, once
// per kind.
//
// Nor does a kernel that never finishes hang the caller: every run after
// the first candidate's first waits at most 100 times as long as that one
// took, plus two seconds (event_done_within), and then the call throws,
// naming the kernel. The device may stay busy, but the caller learns why.

#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "../fastest_choice.h"
#include "cuda_check.cuh"
#include "event_wait.h"
#include "launchers.h"

namespace dtrain::kernels::cuda::experimental {

namespace {

constexpr int kTimedRounds = 3;

// A candidate's run that takes longer than kRunLimitFactor times the first
// candidate's first run, plus kRunLimitFloor, is taken for hung.
constexpr auto kRunLimitFloor = std::chrono::seconds(2);
constexpr int kRunLimitFactor = 100;

[[noreturn]] void throw_hung(const std::string& name, const std::string& first,
                             std::chrono::steady_clock::duration limit) {
  const double seconds = std::chrono::duration<double>(limit).count();
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", seconds);
  throw std::runtime_error("furthest_point_sample: the CUDA FPS kernel '" + name +
                           "' did not finish within " + waited +
                           " s while its speed was measured (" + std::to_string(kRunLimitFactor) +
                           " times the '" + first +
                           "' kernel's first run); it may still hold the device. Run another "
                           "setting, or the default furthest_point_sample, and report it");
}

// device, B, N, npoint (each a power of two at least the input's)
using InputKind = std::tuple<int, std::int64_t, std::int64_t, std::int64_t>;

detail::FastestChoice<InputKind>& fastest() {
  static detail::FastestChoice<InputKind> choice(kTimedRounds);
  return choice;
}

// Two CUDA events, destroyed however the scope is left.
class EventPair {
 public:
  EventPair() {
    DTRAIN_CUDA_CHECK(cudaEventCreate(&begin_));
    const cudaError_t status = cudaEventCreate(&end_);
    if (status != cudaSuccess) {
      cudaEventDestroy(begin_);
      DTRAIN_CUDA_CHECK(status);
    }
  }
  ~EventPair() {
    cudaEventDestroy(begin_);
    cudaEventDestroy(end_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  cudaEvent_t begin() const { return begin_; }
  cudaEvent_t end() const { return end_; }

 private:
  cudaEvent_t begin_ = nullptr;
  cudaEvent_t end_ = nullptr;
};

}  // namespace

void launch_fps_fastest(const std::vector<FpsCandidate>& candidates, const float* xyz,
                        std::int64_t batch, std::int64_t n, std::int64_t npoint, std::int64_t start,
                        std::int64_t* out, cudaStream_t stream) {
  auto launch = [&](std::size_t i) {
    launch_setting(candidates.at(i).setting, xyz, batch, n, npoint, start, out, stream);
  };
  int device = 0;
  DTRAIN_CUDA_CHECK(cudaGetDevice(&device));
  const InputKind kind{device, power_of_two_at_least(batch), power_of_two_at_least(n),
                       power_of_two_at_least(npoint)};
  // Every call but a kind's first: the choice, with no events and no
  // names (this runs on every FPS call of a training step).
  if (const std::optional<std::size_t> chosen = fastest().remembered(kind)) {
    return launch(*chosen);
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  DTRAIN_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    return launch(0);
  }
  std::vector<std::string> names;
  for (const FpsCandidate& candidate : candidates) {
    names.emplace_back(candidate.name);
  }
  const EventPair events;
  // How long a run may take before it counts as hung: set by the first
  // run, the first candidate's (Note [Choosing the CUDA FPS kernel by timing
  // it]).
  std::optional<std::chrono::steady_clock::duration> run_limit;
  auto seconds_of_run = [&](std::size_t i) {
    // Picks no kernel makes (-1), so that one which leaves some unwritten
    // cannot pass for agreeing with the run before it; outside the timing.
    DTRAIN_CUDA_CHECK(cudaMemsetAsync(
        out, 0xff, static_cast<std::size_t>(batch * npoint) * sizeof(std::int64_t), stream));
    const auto launched = std::chrono::steady_clock::now();
    DTRAIN_CUDA_CHECK(cudaEventRecord(events.begin(), stream));
    launch(i);
    DTRAIN_CUDA_CHECK(cudaEventRecord(events.end(), stream));
    if (!run_limit) {
      DTRAIN_CUDA_CHECK(cudaEventSynchronize(events.end()));
      run_limit = kRunLimitFloor + kRunLimitFactor * (std::chrono::steady_clock::now() - launched);
    } else if (!event_done_within(events.end(), *run_limit)) {
      throw_hung(candidates.at(i).name, candidates.front().name, *run_limit);
    }
    float ms = 0.0f;
    DTRAIN_CUDA_CHECK(cudaEventElapsedTime(&ms, events.begin(), events.end()));
    return 1e-3 * ms;
  };
  // The picks of the run just made (the events' end: it has finished).
  auto picks_of_run = [&] {
    detail::RunResult picks(static_cast<std::size_t>(batch * npoint));
    DTRAIN_CUDA_CHECK(cudaMemcpyAsync(picks.data(), out, picks.size() * sizeof(std::int64_t),
                                      cudaMemcpyDeviceToHost, stream));
    DTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream));
    return picks;
  };
  launch(fastest().choose(kind, names, seconds_of_run, picks_of_run));
}

std::vector<KindMeasured> fps_fastest_measurements() {
  std::vector<KindMeasured> kinds;
  for (const auto& [kind, measured] : fastest().measured()) {
    kinds.push_back(
        {std::get<0>(kind), std::get<1>(kind), std::get<2>(kind), std::get<3>(kind), measured});
  }
  return kinds;
}

}  // namespace dtrain::kernels::cuda::experimental
