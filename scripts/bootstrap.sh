#!/usr/bin/env bash
# Installs what this machine lacks to build and test dtrain, and nothing more.
# Idempotent: when everything is present it only checks, in a few seconds.
#
#   Debian packages  build tools and libraries (apt-get; needs root or sudo)
#   LibTorch         the pinned PyPI torch wheel, in a virtual environment
#                    outside the repository ($DTRAIN_VENV)
#   Python packages  scikit-learn (the tests compare the apps' metrics with
#                    it), matplotlib (the apps' PNG pictures), lizard (the
#                    lint of file and function sizes) and tensorboard (its
#                    reader checks the Trainer's event files), pinned, in
#                    that venv
#   CUDA toolkit     only where the machine has none: NVIDIA's CUDA 13.0
#                    wheels in that venv, gathered in $DTRAIN_WHEEL_CUDA_HOME
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Debian package -> one file it installs (cheap presence check without dpkg-query per package).
declare -A DEB_MARKERS=(
  [cmake]=/usr/bin/cmake
  [ninja-build]=/usr/bin/ninja
  [ccache]=/usr/bin/ccache
  [g++]=/usr/bin/g++
  [python3-venv]=/usr/lib/python3/dist-packages/venv
  [zlib1g-dev]=/usr/include/zlib.h
  [libhdf5-dev]=/usr/include/hdf5/serial/H5Cpp.h
  [libspdlog-dev]=/usr/include/spdlog/spdlog.h
  [libfmt-dev]=/usr/include/fmt/format.h
  [libgtest-dev]=/usr/include/gtest/gtest.h
  [libgmock-dev]=/usr/include/gmock/gmock.h
  [libbenchmark-dev]=/usr/include/benchmark/benchmark.h
  [libcli11-dev]=/usr/include/CLI/CLI.hpp
  [libyaml-cpp-dev]=/usr/include/yaml-cpp/yaml.h
  [libopenmpi-dev]=/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h
  [openmpi-bin]=/usr/bin/mpirun
  [libgloo-dev]=/usr/include/gloo/config.h
  [libprotobuf-dev]=/usr/include/google/protobuf/message.h
  [protobuf-compiler]=/usr/bin/protoc
  [clang-14]=/usr/bin/clang++-14
  [libclang-rt-14-dev]=/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
  [dataset-fashion-mnist]=/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
  # The slurm tests' single-host cluster (tests/slurm): controller, node daemon, munge, PMIx.
  [slurm-wlm]=/usr/sbin/slurmctld
  [slurmd]=/usr/sbin/slurmd
  [munge]=/usr/sbin/munged
  [libpmix-dev]=/usr/lib/x86_64-linux-gnu/pmix2/include/pmix.h
)

install_debian_packages() {
  local missing=()
  local pkg
  for pkg in "${!DEB_MARKERS[@]}"; do
    [ -e "${DEB_MARKERS[$pkg]}" ] || missing+=("$pkg")
  done
  # A Python with venv support already on PATH (pyenv, a distribution build)
  # makes python3-venv unnecessary.
  if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing=("${missing[@]/python3-venv/}")
  fi
  read -r -a missing <<<"${missing[*]}"
  if [ "${#missing[@]}" -eq 0 ]; then
    dtrain_log "Debian packages: all present"
    return
  fi
  dtrain_log "Debian packages: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q >/dev/null || dtrain_die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    dtrain_die "apt-get install ${missing[*]} failed"
}

install_libtorch() {
  if [ -x "$DTRAIN_VENV/bin/python" ] &&
    [ "$("$DTRAIN_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null)" = "$DTRAIN_TORCH_VERSION" ]; then
    dtrain_log "LibTorch: torch $DTRAIN_TORCH_VERSION present in $DTRAIN_VENV"
    return
  fi
  dtrain_log "LibTorch: installing torch==$DTRAIN_TORCH_VERSION into $DTRAIN_VENV (a few GB, once)"
  mkdir -p "$DTRAIN_HOME"
  python3 -m venv "$DTRAIN_VENV" || dtrain_die "cannot create a virtual environment at $DTRAIN_VENV"
  "$DTRAIN_VENV/bin/pip" install -q --progress-bar off "torch==$DTRAIN_TORCH_VERSION" numpy ||
    dtrain_die "pip install torch==$DTRAIN_TORCH_VERSION failed"
}

# The packages the apps and tests use from the venv's Python, each at its
# pinned version: scikit-learn, against which the tests check the apps'
# accuracy metrics, matplotlib, with which the apps draw their curves and
# confusion matrices (apps/common/plot_report.py), lizard, whose C++ and
# Python parser finds the functions scripts/check_source_sizes.py measures,
# and tensorboard, whose own reader the tests compare --tensorboard's event
# files with.
install_python_packages() {
  local wanted=("scikit-learn==$DTRAIN_SKLEARN_VERSION" "matplotlib==$DTRAIN_MATPLOTLIB_VERSION"
    "lizard==$DTRAIN_LIZARD_VERSION" "tensorboard==$DTRAIN_TENSORBOARD_VERSION")
  local missing=() spec
  for spec in "${wanted[@]}"; do
    [ "$("$DTRAIN_VENV/bin/python" -c "import importlib.metadata as m; print(m.version('${spec%%==*}'))" 2>/dev/null)" = "${spec##*==}" ] ||
      missing+=("$spec")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    dtrain_log "Python packages: ${wanted[*]} present"
    return
  fi
  dtrain_log "Python packages: installing ${missing[*]} into $DTRAIN_VENV"
  "$DTRAIN_VENV/bin/pip" install -q --progress-bar off "${missing[@]}" ||
    dtrain_die "pip install ${missing[*]} failed"
}

# The PyPI torch wheel is a CUDA build, and its CMake config stops without
# a CUDA toolkit (nvcc), even for a CPU-only consumer. Where the machine has
# none, NVIDIA's wheels of the same CUDA 13.0 (nvcc, NVVM, its headers, CUB)
# go into the venv beside the runtime libraries torch brought, and
# DTRAIN_WHEEL_CUDA_HOME gathers them, by symbolic links, in a toolkit's
# layout: bin, nvvm, include (with NCCL's header), lib64 (with the names
# the linker looks for). nvcc finds its tree relative to the bin it is
# started from.
install_cuda_toolkit() {
  if nvcc --version >/dev/null 2>&1; then
    dtrain_log "CUDA: $(nvcc --version | tail -n 2 | head -n 1) ($(command -v nvcc))"
    return
  fi
  local site
  site="$("$DTRAIN_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  local cu13="$site/nvidia/cu13" nccl="$site/nvidia/nccl"
  if [ ! -x "$cu13/bin/nvcc" ] || [ ! -d "$cu13/nvvm" ] || [ ! -d "$cu13/include/cccl" ] ||
    [ ! -f "$cu13/include/crt/host_config.h" ]; then
    dtrain_log "CUDA: no toolkit on this machine; installing NVIDIA's CUDA $DTRAIN_CUDA_WHEEL_VERSION wheels into $DTRAIN_VENV"
    "$DTRAIN_VENV/bin/pip" install -q --progress-bar off \
      "nvidia-cuda-nvcc==$DTRAIN_CUDA_WHEEL_VERSION" "nvidia-nvvm==$DTRAIN_CUDA_WHEEL_VERSION" \
      "nvidia-cuda-crt==$DTRAIN_CUDA_WHEEL_VERSION" "nvidia-cuda-cccl==$DTRAIN_CCCL_WHEEL_VERSION" ||
      dtrain_die "pip install of the CUDA $DTRAIN_CUDA_WHEEL_VERSION wheels failed"
  fi
  local home="$DTRAIN_WHEEL_CUDA_HOME" file name
  rm -rf "$home.new"
  mkdir -p "$home.new/bin" "$home.new/include" "$home.new/lib64"
  ln -s "$cu13/nvvm" "$home.new/nvvm"
  for file in "$cu13"/bin/*; do ln -s "$file" "$home.new/bin/"; done
  for file in "$cu13"/include/* "$nccl"/include/*; do ln -s "$file" "$home.new/include/"; done
  for file in "$cu13"/lib/* "$nccl"/lib/*; do
    name="$(basename "$file")"
    ln -sf "$file" "$home.new/lib64/$name"
    # libcudart.so.13 -> libcudart.so, as a toolkit has it for -lcudart.
    [[ $name =~ ^(lib[A-Za-z0-9_]+\.so)\.[0-9.]+$ ]] &&
      [ ! -e "$home.new/lib64/${BASH_REMATCH[1]}" ] && ln -s "$file" "$home.new/lib64/${BASH_REMATCH[1]}"
  done
  rm -rf "$home" && mv "$home.new" "$home"
  export PATH="$home/bin:$PATH" CUDA_HOME="$home"
  nvcc --version >/dev/null 2>&1 || dtrain_die "the CUDA toolkit assembled in $home does not run nvcc"
  dtrain_log "CUDA: $(nvcc --version | tail -n 2 | head -n 1) (NVIDIA's wheels, in $home)"
}

install_debian_packages
install_libtorch
install_python_packages
install_cuda_toolkit
