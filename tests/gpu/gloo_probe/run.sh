#!/usr/bin/env bash
# Creates a Gloo TCP device with the carried libgloo (.gpu-deps, see
# prepare_gpu_deps.sh) outside dtrain, the way dtrain's Gloo module does:
# without and with LibTorch loaded first (RTLD_GLOBAL), and without and with
# RTLD_DEEPBIND; then the dynamic linker's bindings of std::call_once's
# state. On the GPU machine's image every case created its device (tests/
# gpu/README.md, "Gloo on the image"), where dtrain's own Gloo groups crash.
# Run from the repository root, carrying .gpu-deps:
#
#   bash tests/gpu/gloo_probe/run.sh
set -u
here=tests/gpu/gloo_probe
work="${TMPDIR:-/tmp}/dtrain-gloo-probe"
py="${DTRAIN_GPU_PYTHON:-python3}"
mkdir -p "$work/rt"
# Only the libraries the machine lacks, as run_gpu_checks.sh does.
for lib in .gpu-deps/lib/gloo-runtime/*; do
  name="$(basename "$lib")"
  ldconfig -p | grep -q "^\s*$name " || ln -sf "$PWD/$lib" "$work/rt/$name"
done
export LD_LIBRARY_PATH="$work/rt:$PWD/.gpu-deps/lib"
g++ -std=c++17 -O1 -fPIC -shared "$here/shim.cpp" -I.gpu-deps/include -L.gpu-deps/lib \
  -l:libgloo.so.0 -o "$work/shim.so" || exit 1
g++ -std=c++17 -O1 "$here/main.cpp" -o "$work/probe" -ldl || exit 1
torch="$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')"
[[ -f "$torch" ]] || torch="${torch%_cuda.so}_cpu.so"
for preload in - "$torch"; do
  for mode in plain deep; do
    echo "== LibTorch ${preload##*/}, $mode"
    timeout 30 "$work/probe" "$preload" "$work/shim.so" "$mode" 2>&1 | tail -n 3
    echo "exit ${PIPESTATUS[0]}"
  done
done
echo "== bindings of std::call_once's state, LibTorch loaded, RTLD_DEEPBIND"
rm -f "$work"/ld.*
LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/ld" timeout 30 "$work/probe" "$torch" "$work/shim.so" deep \
  >/dev/null 2>&1
cat "$work"/ld.* | grep -E "binding file [^ ]*(libgloo|libstdc)" | grep -E "once" |
  sed 's/^ *[0-9]*:[[:space:]]*//' | sort -u
