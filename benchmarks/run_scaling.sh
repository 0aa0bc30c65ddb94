#!/usr/bin/env bash
# The DDP scaling model (benchmarks/report/scaling_model.py) and what it is
# checked against: dtrain's DDP step and local step of the toy CNN and of
# PointNet++ ssg and msg at 1, 2 and 3 CPU ranks on this machine
# (bench_ddp, Gloo over loopback, one thread per rank, every participant
# taking turns in lockstep, Note [Lockstep benchmarks]). Beside DDP it times
# local steps (that many independent trainings at once) and, from 2 ranks,
# synchronous ones (the same with a barrier per step: the compute as the
# machine's cores share it among ranks that wait for each other). The model
# takes the synchronous step, adds the all-reduce cost fitted to this run's
# Gloo all-reduce (allreduce_gloo_rounds.csv) and the engine's 1-rank cost,
# then predicts weak scaling to 512 GPUs from published NVLink and
# InfiniBand figures (Note [DDP scaling model]).
# Output: benchmarks/results/scaling_cpu_rounds.csv (the measured blocks),
# allreduce_fit.csv, scaling_model.csv and scaling_model.png.
#
#   bash benchmarks/run_scaling.sh [--quick] [--rounds 5]
#
# Needs allreduce_gloo_rounds.csv from run_allreduce.sh in the results
# folder (run_all.sh runs that first; --quick falls back on the committed
# one). About 5 minutes on 2 cores. --quick (a smoke run: the toy CNN at 1
# and 2 ranks, one round) writes into $DTRAIN_BUILD_DIR/bench-quick unless
# DTRAIN_RESULTS_DIR says where (CTest's bench.scaling runs it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_ddp
rounds=7 warmup=2 worlds="1 2 3"
# model, batch per rank, points per cloud, steps per block
configs=("toycnn 32 512 20" "pointnet2-ssg 2 1024 4" "pointnet2-msg 2 512 3")
quick=0
while (($#)); do
  case "$1" in
    --quick) quick=1; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    *) echo "$runner: unknown argument '$1' (--quick, --rounds)" >&2; exit 2 ;;
  esac
done
if [[ $quick == 1 ]]; then
  quick_results
  rounds=1 warmup=1 worlds="1 2" configs=("toycnn 8 512 2")
fi
require_python
allreduce="$results/allreduce_gloo_rounds.csv"
if [[ ! -f $allreduce && $quick == 1 ]]; then
  allreduce="$root/benchmarks/results/allreduce_gloo_rounds.csv"
fi
[[ -f $allreduce ]] || { echo "$runner: no $allreduce (run benchmarks/run_allreduce.sh first)" >&2; exit 1; }

for config in "${configs[@]}"; do
  read -r model batch points steps <<<"$config"
  turns="$scratch/$model"
  participants=()
  for world in $worlds; do
    participants+=("dtrain-local$world:$world" "dtrain-ddp$world:$world")
    ((world == 1)) || participants+=("dtrain-sync$world:$world")
  done
  lockstep_setup "$turns" "${participants[@]}"
  echo "== $model, batch $batch per rank: $rounds rounds of $steps steps, $(uptime | sed 's/.*load/load/')"
  for participant in "${participants[@]}"; do
    name="${participant%:*}" world="${participant#*:}"
    mode="${name#dtrain-}" mode="${mode%%[0-9]*}"
    run_world "$world" "$bench" --mode "$mode" --model "$model" --batch "$batch" \
      --points "$points" --steps "$steps" --rounds "$rounds" \
      --warmup "$warmup" --threads 1 --lockstep "$turns:$name" --csv "$scratch/raw-$model-$name.csv" &
    lockstep_started $!
  done
  lockstep_wait
done

"$python" "$root/benchmarks/report/rounds.py" ddp --out "$scratch/scaling_cpu_rounds.csv" \
  --settings "Gloo over loopback; 1 thread per rank; $warmup warm-up steps; lockstep rounds of one block per participant; $rounds rounds; local = that many independent trainings at once; sync = local with a barrier after every step; $host_memory" \
  "$scratch"/raw-*.csv
png=(--png "$scratch/scaling_model.png")
"$python" "$root/benchmarks/report/scaling_model.py" --rounds "$scratch/scaling_cpu_rounds.csv" \
  --allreduce "$allreduce" --allreduce-mpi "$results/allreduce_mpi_rounds.csv" \
  --gpu-summary "$root/benchmarks/results/gpu_summary.txt" \
  --gpu-step "$root/benchmarks/results/gpu_pointnet2_step.csv" \
  --out "$scratch/scaling_model.csv" --fit-out "$scratch/allreduce_fit.csv" "${png[@]}"
for name in scaling_cpu_rounds.csv allreduce_fit.csv scaling_model.csv scaling_model.png; do
  if [[ -f "$scratch/$name" ]]; then mv "$scratch/$name" "$results/$name"; fi
done
echo "report: $results/scaling_model.csv"
