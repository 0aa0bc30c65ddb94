#!/usr/bin/env bash
# The test suite under the sanitizers, in a build folder of its own
# (DTRAIN_SANITIZE, README "Build options"), every sanitizer error fatal:
#
#   bash scripts/sanitize.sh address      # ASan + UBSan, build-asan/
#   bash scripts/sanitize.sh undefined    # UBSan, build-ubsan/
#   bash scripts/sanitize.sh address -R Gloo   # further arguments go to ctest
#   bash scripts/sanitize.sh address --program dtrain_dist_tests
#
# --program NAME builds that test program alone (and what it links) and
# runs its tests only: the CI runs dtrain_dist_tests so -- every Gloo
# group's test, conformance at worlds 2-4 included -- after the main
# suite (scripts/test.sh). It links the distributed layer alone
# (dtrain::dist_layer), so a cold build compiles that layer, not the SDK.
#
# Both run every program, the Gloo groups' included (Gloo/GlooConformance,
# GlooTimeout, the DDP tests): the Gloo backend is LibTorch's own, with no
# module of its own to load (Note [One Gloo in the process] in
# sdk/src/dist/gloo/torch_gloo.h). UBSan alone is the quicker run.
# Always left out: the tests that load dtrain's library into Python (a
# sanitizer runtime must come first in a process, and python's does not
# have it), the install test (its consumer builds without sanitizers),
# valgrind's (it cannot run a sanitized program), the crash traces' (the
# sanitizer reports the crash itself), the host-memory policy's (ASan
# replaces malloc, whose settings it checks), the process setup's (a
# sanitizer has handlers of its own for the fatal signals), the benchmarks
# and the GPU tests. The build is -O1 (ASan's advice: fast enough to run,
# quicker to compile); a first build of everything takes about 20 minutes
# on 2 cores, later ones hit ccache.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mode="${1:-address}"
(($#)) && shift
program=""
if [[ "${1:-}" == --program ]]; then
  program="${2:?--program needs the name of a test program}"
  shift 2
fi
case "$mode" in
  address) sanitizers="address,undefined" folder=build-asan skip_labels="gpu|bench|install" ;;
  undefined) sanitizers="undefined" folder=build-ubsan skip_labels="gpu|bench|install" ;;
  *) dtrain_die "sanitize.sh: the first argument is address or undefined, got '$mode'" ;;
esac
export DTRAIN_BUILD_DIR="$DTRAIN_REPO/$folder"
export DTRAIN_CMAKE_ARGS="-DDTRAIN_SANITIZE=$sanitizers -DDTRAIN_BUILD_BENCHMARKS=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 ${DTRAIN_CMAKE_ARGS:-}"

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
if [[ -n "$program" ]]; then
  dtrain_build "$program"
  set -- -L "^$program\$" "$@"
else
  dtrain_build
fi
# Leaks are not checked: LibTorch keeps process-lifetime singletons that
# LeakSanitizer reports at every exit. A report ends the process with a
# code of its own (86 ASan, 87 UBSan) after the stack.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
dtrain_log "running tests under $sanitizers"
cd "$DTRAIN_BUILD_DIR"
ctest --output-on-failure -j "${DTRAIN_TEST_JOBS:-$(nproc)}" -LE "$skip_labels" \
  -E '^(python\.|dist\.gloo_valgrind$|CrashTrace\.|HostMemory\.|ProcessSetup\.)' "$@"
