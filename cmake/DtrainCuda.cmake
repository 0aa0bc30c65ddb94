# Enables the CUDA language when asked or, with DTRAIN_CUDA=AUTO, when nvcc
# exists. No GPU is needed: kernels compile and link on machines without one,
# and GPU tests skip at run time.
set(DTRAIN_WITH_CUDA OFF)

# Without a system toolkit, the one bootstrap put together from NVIDIA's
# wheels (DtrainWheelCuda.cmake).
include(DtrainWheelCuda)
dtrain_find_wheel_cuda()

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
