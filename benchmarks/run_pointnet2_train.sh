#!/usr/bin/env bash
# PointNet++ classifier training step: dtrain's C++ model
# (bench_pointnet2_train) against the same model in Python PyTorch, with
# pure-PyTorch point ops and with dtrain's ops through torch.ops
# (benchmarks/peers/pointnet2_train_torch.py), and dtrain's model with
# LibTorch's batch norm + ReLU in place of the fused op (--norm-relu
# separate). The programs take turns, round after round, so that load on a
# shared machine falls on all of them; the summary takes each one's median
# over the rounds. All run under the same host-memory policy.
# Output: benchmarks/results/pointnet2_train_cpu.csv (summary with speedups)
# and pointnet2_train_cpu_rounds.csv (every round), + .png of the summary.
#
#   bash benchmarks/run_pointnet2_train.sh [--rounds 5] [--threads N] [--amp bf16] [--quick]
#
# --amp bf16 times every program with its forward and loss under CPU bf16
# autocast (dtrain::amp::AutocastGuard, torch.autocast) and writes
# pointnet2_train_bf16_cpu*.csv/.png instead.
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
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --amp) amp="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "$runner: unknown argument '$1' (--rounds, --threads, --amp, --quick)" >&2; exit 2 ;;
  esac
done
[[ $amp == off || $amp == bf16 ]] || { echo "$runner: --amp must be off or bf16, got '$amp'" >&2; exit 2; }
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
    "$bench" "${common[@]}" --csv "$raw"
    # The same model with LibTorch's batch norm and ReLU: what the fused op gains.
    "$bench" "${common[@]}" --norm-relu separate --csv "$raw"
    # The peer under the same host-memory policy that dtrain's programs set
    # (dtrain::util::retain_freed_host_memory: glibc's mmap threshold at its
    # 32 MiB maximum, no block mapped on its own, 1 GiB trim threshold), so
    # that the comparison is of the code, not of malloc settings.
    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824 \
      "$python" "$root/benchmarks/peers/pointnet2_train_torch.py" --library "$library" \
      "${common[@]}" --out "$raw"
  done
done
name=pointnet2_train_cpu
[[ $amp == bf16 ]] && name=pointnet2_train_bf16_cpu
summary="$results/$name.csv"
"$python" "$root/benchmarks/report/pointnet2_train_report.py" --rounds-csv "$raw" \
  --out "$scratch/summary.csv" --png "$scratch/summary.png"
# Together, so a run stopped half-way leaves the previous set.
mv "$raw" "$results/${name}_rounds.csv"
mv "$scratch/summary.csv" "$summary"
[[ -f "$scratch/summary.png" ]] && mv "$scratch/summary.png" "${summary%.csv}.png"
echo "wrote $summary"
