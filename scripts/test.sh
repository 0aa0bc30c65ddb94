#!/usr/bin/env bash
# The README's test command: installs whatever is missing, builds dtrain
# (CUDA kernels included when nvcc exists) and runs the whole test suite,
# then the distributed layer's tests (every Gloo group's) again under
# AddressSanitizer and UBSan, in build-asan/ (scripts/sanitize.sh
# --program: that layer alone is compiled again, about 6 minutes cold on
# 2 cores, 1 with ccache).
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -L unit    # extra arguments go to ctest, and no sanitizer run
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
dtrain_build
dtrain_log "running tests"
status=0
(cd "$DTRAIN_BUILD_DIR" && ctest --output-on-failure -j "${DTRAIN_TEST_JOBS:-$(nproc)}" "$@") ||
  status=$?
if (($# == 0)); then
  bash "$DTRAIN_REPO/scripts/sanitize.sh" address --program dtrain_dist_tests || status=1
fi
exit "$status"
