#!/usr/bin/env bash
# DDP on CPU (Gloo, loopback): dtrain's bench_ddp beside PyTorch's own
# DistributedDataParallel (benchmarks/peers/ddp_torch.py, same wheel, same
# models, batches and one thread per process), world sizes 1 and 2, plus
# local training without DDP as the overhead baseline (at world 2: two
# independent local trainings at once, the same load on the machine). All
# eight participants
# of a configuration run at once and take turns in lockstep, one short block
# of steps each per round (Note [Lockstep benchmarks] in
# benchmarks/support/lockstep.h), so every ratio compares blocks timed
# seconds apart. The report (Note [Benchmark verdicts] in
# benchmarks/report/stats.py) compares dtrain's DDP step with torch's, the
# local steps alike, and each DDP step with its local one (its overhead),
# into benchmarks/results/ddp_cpu.csv (+ ddp_cpu.png with matplotlib).
#
#   bash benchmarks/run_ddp.sh [--rounds N] [--quick]
#
# About 4 minutes on 2 cores; --quick (about 20 s, a smoke run: world size
# 2 alone, the PointNet++-sized model at 2 clouds of 128 points per rank,
# 2 rounds of 2 steps after 1 warm-up step) writes
# into $DTRAIN_BUILD_DIR/bench-quick unless DTRAIN_RESULTS_DIR says where,
# never over the committed results (CTest's bench.ddp runs it). The blocks
# go to ddp_cpu_rounds.csv beside the report, which compare.py can make
# again from them.
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_ddp; DTRAIN_PYTHON,
# else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default ~/.cache/dtrain).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_ddp
rounds=""
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "run_ddp.sh: unknown flag '$1' (use --rounds N, --quick)" >&2; exit 2 ;;
  esac
done

require_python
if [[ $quick == 1 ]]; then quick_results; fi

# model, batch per rank, steps per block, rounds
configs=("toycnn 8 30 20" "toycnn 32 20 20" "toycnn 128 8 20" "pointmlp 8 3 12")
worlds=(1 2)
warmup=5
points=512  # per cloud, pointmlp only
if [[ $quick == 1 ]]; then
  # Every Python participant spends ~4 s of CPU importing torch (its
  # optimizer pulls in torch._dynamo), most of a smoke run's time: so one
  # configuration, at the world size that communicates. pointmlp, because
  # toycnn's model and peer also run in run_amp.sh.
  configs=("pointmlp 2 2 2")
  worlds=(2)
  warmup=1
  points=128
fi

for config in "${configs[@]}"; do
  read -r model batch steps config_rounds <<<"$config"
  config_rounds="${rounds:-$config_rounds}"
  turns="$scratch/$model-$batch"
  # name:world, in turn order
  participants=()
  for world in "${worlds[@]}"; do
    participants+=("dtrain-local$world:$world" "torch-local$world:$world"
      "dtrain-ddp$world:$world" "torch-ddp$world:$world")
  done
  lockstep_setup "$turns" "${participants[@]}"
  echo "== $model, batch $batch per rank: $config_rounds rounds of $steps steps"
  for participant in "${participants[@]}"; do
    name="${participant%:*}"
    world="${participant#*:}"
    impl="${name%%-*}"
    mode=ddp
    [[ $name == *local* ]] && mode=local
    program=("$bench")
    [[ $impl == torch ]] && program=("$python" "$root/benchmarks/peers/ddp_torch.py")
    run_world "$world" "${program[@]}" --mode "$mode" --model "$model" --batch "$batch" \
      --steps "$steps" --rounds "$config_rounds" --warmup "$warmup" --points "$points" --threads 1 \
      --lockstep "$turns:$name" --csv "$scratch/raw-$model-$batch-$name.csv" &
    lockstep_started $!
  done
  lockstep_wait
done

settings="Gloo over loopback; 1 thread per process; $warmup warm-up steps; lockstep rounds of \
one block each (steps per block in the case's rounds CSV); local = that many independent \
trainings at once; $host_memory"
report ddp_cpu ddp "$settings" \
  "dtrain-ddp:torch-ddp,dtrain-local:torch-local,dtrain-local:dtrain-ddp,torch-local:torch-ddp" \
  "DDP step on the CPU, dtrain against PyTorch DDP (and each DDP against its local step)" \
  --extra backward_ms hidden_pct -- "$scratch"/raw-*.csv
echo "report: $results/ddp_cpu.csv (rounds: ddp_cpu_rounds.csv)"
