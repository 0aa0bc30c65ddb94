# Enables the CUDA language when asked or, with DTRAIN_CUDA=AUTO, when nvcc
# exists. No GPU is needed: kernels compile and link on machines without one,
# and GPU tests skip at run time.
set(DTRAIN_WITH_CUDA OFF)

# A machine without a CUDA toolkit: the one scripts/bootstrap.sh puts
# together from NVIDIA's wheels (docs/libtorch.md), for a configure run by
# hand (the scripts put it on PATH). LibTorch's config finds nvcc on PATH,
# and needs it even with DTRAIN_CUDA=OFF.
if(NOT CMAKE_CUDA_COMPILER AND NOT EXISTS /usr/local/cuda/bin/nvcc)
  execute_process(COMMAND nvcc --version RESULT_VARIABLE _dtrain_nvcc_status
                  OUTPUT_QUIET ERROR_QUIET)
  if(DEFINED ENV{DTRAIN_WHEEL_CUDA_HOME})
    set(_dtrain_wheel_cuda "$ENV{DTRAIN_WHEEL_CUDA_HOME}")
  elseif(DEFINED ENV{DTRAIN_HOME})
    set(_dtrain_wheel_cuda "$ENV{DTRAIN_HOME}/cuda-13.0")
  elseif(DEFINED ENV{XDG_CACHE_HOME})
    set(_dtrain_wheel_cuda "$ENV{XDG_CACHE_HOME}/dtrain/cuda-13.0")
  else()
    set(_dtrain_wheel_cuda "$ENV{HOME}/.cache/dtrain/cuda-13.0")
  endif()
  if(NOT _dtrain_nvcc_status EQUAL 0 AND EXISTS "${_dtrain_wheel_cuda}/bin/nvcc")
    set(ENV{PATH} "${_dtrain_wheel_cuda}/bin:$ENV{PATH}")
    set(CMAKE_CUDA_COMPILER "${_dtrain_wheel_cuda}/bin/nvcc")
    message(STATUS "dtrain: no CUDA toolkit on PATH; the one from NVIDIA's wheels in ${_dtrain_wheel_cuda}")
  endif()
endif()

if(NOT DTRAIN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES "${DTRAIN_CUDA_ARCHITECTURES}")
    enable_language(CUDA)
    # C++17 for device code: CMake 3.25 knows no C++20 flag for nvcc 13, and
    # the .cu files need nothing newer.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(DTRAIN_WITH_CUDA ON)
    message(STATUS "dtrain: CUDA ${CMAKE_CUDA_COMPILER_VERSION} for architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(DTRAIN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DTRAIN_CUDA=ON but no CUDA compiler (nvcc) was found; install the CUDA toolkit or set DTRAIN_CUDA=OFF")
  else()
    message(STATUS "dtrain: nvcc not found, building without CUDA kernels")
  endif()
endif()

# Tell LibTorch's CMake config our architectures, so it does not try to
# detect GPUs by compiling and running a probe (there may be none). Also
# with DTRAIN_CUDA=OFF: the CUDA wheel's config still finds an installed
# toolkit, and its probe fails to configure beside this project's C++20.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(_dtrain_torch_archs "")
  foreach(arch IN LISTS DTRAIN_CUDA_ARCHITECTURES)
    string(REGEX REPLACE "^([0-9]+)([0-9])$" "\\1.\\2" arch_dotted "${arch}")
    list(APPEND _dtrain_torch_archs "${arch_dotted}")
  endforeach()
  set(TORCH_CUDA_ARCH_LIST "${_dtrain_torch_archs}")
endif()
