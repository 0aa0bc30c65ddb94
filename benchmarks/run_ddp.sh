#!/usr/bin/env bash
# DDP on CPU (Gloo, loopback): dtrain's bench_ddp beside PyTorch's own
# DistributedDataParallel (benchmarks/peers/ddp_torch.py, same wheel, same
# models, batches and one thread per process), world sizes 1 and 2, plus
# local training without DDP as the overhead baseline. Runs are
# interleaved (dtrain, torch, dtrain, ...) and repeated; the report takes
# medians into benchmarks/results/ddp_cpu.csv (+ ddp_cpu.png with matplotlib).
#
#   bash benchmarks/run_ddp.sh [--repeats N] [--quick]
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_ddp; DTRAIN_PYTHON,
# else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default ~/.cache/dtrain).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_ddp
repeats=3
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeats) repeats="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "run_ddp.sh: unknown flag '$1' (use --repeats N, --quick)" >&2; exit 2 ;;
  esac
done

require_python

raw="$scratch/raw.csv"

# run_world <world> <command...>: one process per rank, torchrun's variables.
run_world() {
  local world="$1"; shift
  local master_port pids=() rank status=0
  master_port="$(port)"
  for ((rank = 0; rank < world; rank++)); do
    RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$master_port \
      OMP_NUM_THREADS=1 "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  return $status
}

# model batch steps
configs=("toycnn 32 200" "toycnn 128 80" "pointmlp 8 15")
if [[ $quick == 1 ]]; then configs=("toycnn 32 40" "pointmlp 4 4"); fi

for ((r = 1; r <= repeats; r++)); do
  for config in "${configs[@]}"; do
    read -r model batch steps <<<"$config"
    common=(--model "$model" --batch "$batch" --steps "$steps" --warmup 5 --threads 1 --csv "$raw")
    echo "== repeat $r/$repeats: $model, batch $batch per rank"
    run_world 1 "$bench" --mode local "${common[@]}"
    run_world 1 "$python" "$root/benchmarks/peers/ddp_torch.py" --mode local "${common[@]}"
    for world in 1 2; do
      run_world "$world" "$bench" --mode ddp "${common[@]}"
      run_world "$world" "$python" "$root/benchmarks/peers/ddp_torch.py" --mode ddp "${common[@]}"
    done
  done
done

png=""
if "$python" -c 'import matplotlib' 2>/dev/null; then
  png="$results/ddp_cpu.png"
fi
"$python" "$root/benchmarks/report/ddp_report.py" --raw "$raw" --out "$results/ddp_cpu.csv" \
  ${png:+--png "$png"}
