#!/usr/bin/env bash
# Every benchmark runner, then benchmarks/results/SUMMARY.md and the
# README's performance table (benchmarks/report/summary.py), from a fresh
# clone as from a used one:
#
#   bash benchmarks/run_all.sh            # about 25 minutes on 2 cores
#   bash benchmarks/run_all.sh --quick    # under 2 minutes: each runner's smoke run
#
# It sets up and builds what is missing (scripts/bootstrap.sh, the
# benchmark targets), installs the optional peers and matplotlib into the
# venv (benchmarks/requirements-peers.txt; not with DTRAIN_BENCH_NO_INSTALL=1,
# where a runner whose peers are missing is skipped), fixes the commit and
# machine every CSV names before the first result changes the tree, runs
# each runner in turn and prints how long each took. The full run writes
# into benchmarks/results (or DTRAIN_RESULTS_DIR) and rewrites the README's
# table; --quick writes into $DTRAIN_BUILD_DIR/bench-quick (or
# DTRAIN_RESULTS_DIR) and leaves the README alone. Commit first: the CSVs
# name the commit they ran at, "-dirty" when tracked files (other than the
# results) differ from it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "run_all.sh: unknown argument '$1' (--quick)" >&2; exit 2 ;;
esac
bench="$DTRAIN_REPO/benchmarks"
python="${DTRAIN_PYTHON:-$DTRAIN_VENV/bin/python}"
start=$SECONDS

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
dtrain_build bench_pointnet2_ops bench_batch_norm_relu bench_allreduce bench_amp_toycnn bench_ddp \
  bench_pointnet2_train bench_checkpoint dtrain_kernels train_pointnet2 dtrun
export DTRAIN_BUILD_DIR DTRAIN_PYTHON="$python"
if [[ $quick == 1 ]]; then
  export DTRAIN_RESULTS_DIR="${DTRAIN_RESULTS_DIR:-$DTRAIN_BUILD_DIR/bench-quick}"
  rm -rf "$DTRAIN_RESULTS_DIR"
fi
results="${DTRAIN_RESULTS_DIR:-$bench/results}"
mkdir -p "$results"
if [[ "${DTRAIN_BENCH_NO_INSTALL:-0}" != 1 ]]; then
  "$python" -m pip install --quiet -r "$bench/requirements-peers.txt"
fi
found="$("$python" "$bench/report/stats.py")"
export DTRAIN_BENCH_COMMIT="${found%%$'\n'*}" DTRAIN_BENCH_MACHINE="${found#*$'\n'}"
dtrain_log "results of commit $DTRAIN_BENCH_COMMIT on $DTRAIN_BENCH_MACHINE into $results"

flag=()
[[ $quick == 1 ]] && flag=(--quick)
seeds=(--out "$results/main_job_cpu_seeds.csv")
[[ $quick == 1 ]] && seeds+=(--seeds 0-0 --precisions fp32 --epochs 1)
# name, then the runner's command line
runs=(
  "pointnet2_ops|run_pointnet2_ops.sh"
  "point_ops_peers|run_point_ops_peers.sh"
  "allreduce|run_allreduce.sh"
  "allreduce_mpi|run_allreduce_mpi.sh"
  "amp|run_amp.sh"
  "ddp|run_ddp.sh"
  "pointnet2_train|run_pointnet2_train.sh"
  "pointnet2_train_bf16|run_pointnet2_train.sh --amp bf16 --rounds 3"
  "pointnet2_partseg_train|run_pointnet2_train.sh --model partseg --rounds 3"
  "batch_norm_relu|run_batch_norm_relu.sh"
  "checkpoint|run_checkpoint.sh"
  "checkpoint_steps|run_checkpoint_steps.sh"
  "scaling|run_scaling.sh"
)
timings=()
for run in "${runs[@]}"; do
  name="${run%%|*}"
  read -r -a command <<<"${run#*|}"
  dtrain_log "== $name: ${command[*]} ${flag[*]}"
  t=$SECONDS
  status=0
  bash "$bench/${command[0]}" "${command[@]:1}" ${flag[@]+"${flag[@]}"} || status=$?
  if ((status == 77)); then
    timings+=("$name: skipped")
  elif ((status != 0)); then
    dtrain_die "$name failed (exit $status); the results so far are in $results"
  else
    timings+=("$name: $((SECONDS - t)) s")
  fi
done
dtrain_log "== main_job_seeds: run_main_job_seeds.sh ${seeds[*]:2}"
t=$SECONDS
bash "$bench/run_main_job_seeds.sh" "${seeds[@]}"
timings+=("main_job_seeds: $((SECONDS - t)) s")

readme=()
[[ $quick == 0 && -z "${DTRAIN_RESULTS_DIR:-}" ]] && readme=(--readme "$DTRAIN_REPO/README.md")
"$python" "$bench/report/summary.py" --results "$results" ${readme[@]+"${readme[@]}"}
dtrain_log "time per runner: $(printf '%s; ' "${timings[@]}")total $((SECONDS - start)) s"
