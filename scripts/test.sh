#!/usr/bin/env bash
# The README's test command: installs whatever is missing, builds dtrain
# (CUDA kernels included when nvcc exists) and runs the whole test suite.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -L unit    # extra arguments go to ctest
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
dtrain_build
dtrain_log "running tests"
cd "$DTRAIN_BUILD_DIR"
ctest --output-on-failure -j "${DTRAIN_TEST_JOBS:-$(nproc)}" "$@"
