#!/usr/bin/env bash
# PointNet++ classifier training step: dtrain's C++ model
# (bench_pointnet2_train) against the same model in Python PyTorch, with
# pure-PyTorch point ops and with dtrain's ops through torch.ops
# (benchmarks/peers/pointnet2_train_torch.py), and dtrain's model with
# LibTorch's batch norm + ReLU in place of the fused op (--norm-relu
# separate). The programs take turns, round after round, so that load on a
# shared machine falls on all of them; the summary takes each one's median
# over the rounds. All run under the same host-memory policy
# (benchmarks/common.sh). The report (Note [Benchmark verdicts] in
# benchmarks/report/stats.py) compares dtrain_cpp with each of the others:
# benchmarks/results/pointnet2_train_cpu.csv, pointnet2_train_cpu_rounds.csv
# (every round) and pointnet2_train_cpu.png.
#
#   bash benchmarks/run_pointnet2_train.sh [--rounds 5] [--threads N] [--amp bf16]
#                                          [--model cls|partseg] [--quick]
#
# --amp bf16 times every program with its forward and loss under CPU bf16
# autocast (dtrain::amp::AutocastGuard, torch.autocast) and writes
# pointnet2_train_bf16_cpu*.csv/.png instead. --model partseg times dtrain's
# part segmentation with its feature propagations and head on rows of
# channels against the same on channel-major Conv1d stacks, into
# pointnet2_partseg_train_cpu*.csv/.png.
#
# DTRAIN_RESULTS_DIR=DIR writes the CSV and plot there instead of
# benchmarks/results (for a trial run that must not replace the committed ones).
#
# Configurations: ssg-lite, batch 16 x 512 points (the README's main job) and
# the paper's ssg, batch 8 x 1024 points. --quick (a smoke run, about 7 s)
# runs ssg-lite alone at batch 4 x 256 points, 2 steps after 1 warm-up step,
# one round on one thread unless --rounds or --threads say otherwise, into
# $DTRAIN_BUILD_DIR/bench-quick unless DTRAIN_RESULTS_DIR says where (CTest's
# bench.pointnet2_train runs it). Environment as the other runners
# (DTRAIN_BUILD_DIR, DTRAIN_PYTHON).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_pointnet2_train

rounds=""
threads=""
quick=0
amp=off
model=cls
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --amp) amp="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "$runner: unknown argument '$1' (--rounds, --threads, --amp, --model, --quick)" >&2; exit 2 ;;
  esac
done
[[ $amp == off || $amp == bf16 ]] || { echo "$runner: --amp must be off or bf16, got '$amp'" >&2; exit 2; }
[[ $model == cls || $model == partseg ]] || { echo "$runner: --model must be cls or partseg, got '$model'" >&2; exit 2; }
library="$build/kernels/libdtrain_kernels.so"
[[ -f "$library" ]] || { echo "$runner: $library is not built (ninja -C $build dtrain_kernels)" >&2; exit 1; }
require_python

raw="$scratch/rounds.csv"
# preset, batch, points, warm-up steps, timed steps
configs=("ssg-lite 16 512 3 10" "ssg 8 1024 1 5")
if [[ $quick == 1 ]]; then
  quick_results
  configs=("ssg-lite 4 256 1 2")
  # One thread: with a thread per core, a step took 1.8 s instead of 36 ms
  # (50x) while a build shared the two cores, as ctest -j shares them.
  rounds="${rounds:-1}" threads="${threads:-1}"
fi
rounds="${rounds:-5}" threads="${threads:-$(nproc)}"
for ((round = 1; round <= rounds; round++)); do
  for config in "${configs[@]}"; do
    read -r preset batch points warmup steps <<<"$config"
    common=(--preset "$preset" --batch-size "$batch" --points "$points" --warmup "$warmup"
            --steps "$steps" --threads "$threads" --amp "$amp")
    echo "== round $round/$rounds, $preset, $(uptime | sed 's/.*load/load/')"
    if [[ $model == partseg ]]; then
      # Part segmentation: its propagations and head on rows of channels against Conv1d stacks.
      "$bench" --model partseg "${common[@]}" --csv "$raw"
      "$bench" --model partseg "${common[@]}" --propagation-layout channel-major --csv "$raw"
      continue
    fi
    "$bench" "${common[@]}" --csv "$raw"
    # The same model with LibTorch's batch norm and ReLU: what the fused op gains.
    "$bench" "${common[@]}" --norm-relu separate --csv "$raw"
    "$python" "$root/benchmarks/peers/pointnet2_train_torch.py" --library "$library" \
      "${common[@]}" --out "$raw"
  done
done
name=pointnet2_train_cpu
suffix=""
if [[ $amp == bf16 ]]; then name=pointnet2_train_bf16_cpu suffix=_bf16; fi
pairs=""
for peer in torch_python torch_python_dtrain torch_python_dtrain_channels_last \
  dtrain_cpp_separate_norm_relu; do
  pairs+="${pairs:+,}dtrain_cpp$suffix:$peer$suffix"
done
if [[ $model == partseg ]]; then
  name="pointnet2_partseg_train${suffix}_cpu"
  pairs="dtrain_cpp_partseg$suffix:dtrain_cpp_partseg_channel_major_propagation$suffix"
fi
report "$name" train \
  "$threads threads per process; one process per program, configuration and round; warm-up and timed steps (median) per process as in the runner's configurations; $rounds rounds; autocast $amp; $host_memory" \
  "$pairs" "PointNet++ $model training step on the CPU (amp $amp): dtrain's C++ model against the same model in Python (cls) or its other layout (partseg)" \
  --extra peak_rss_mb -- "$raw"
echo "wrote $results/$name.csv"
