#!/usr/bin/env bash
# The README's run command: installs whatever is missing, builds dtrain and
# runs the main job -- training the toy CNN on Fashion-MNIST -- writing
# out/train_toycnn.csv. Extra arguments go to train_toycnn (see --help).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
dtrain_build train_toycnn
cd "$DTRAIN_REPO"
dtrain_log "training the toy CNN on Fashion-MNIST"
exec "$DTRAIN_BUILD_DIR/apps/train_toycnn/train_toycnn" "$@"
