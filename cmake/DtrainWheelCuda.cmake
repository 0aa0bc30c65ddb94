# A machine without a CUDA toolkit: the one scripts/bootstrap.sh puts
# together from NVIDIA's wheels in DTRAIN_HOME/cuda-13.0 (docs/libtorch.md).
# LibTorch's CMake config stops when nvcc does not run, even for a consumer
# that compiles no CUDA; the scripts put that toolkit on PATH, and this
# finds it for a configure run by hand. Used by dtrain's own build and by
# the installed dtrainConfig.cmake alike.

include("${CMAKE_CURRENT_LIST_DIR}/DtrainHome.cmake")

# Where no nvcc runs (none at /usr/local/cuda, none on PATH) and the
# assembled toolkit exists: puts its bin on this configure's PATH and sets
# CMAKE_CUDA_COMPILER to its nvcc.
macro(dtrain_find_wheel_cuda)
  if(NOT CMAKE_CUDA_COMPILER AND NOT EXISTS /usr/local/cuda/bin/nvcc)
    execute_process(COMMAND nvcc --version RESULT_VARIABLE _dtrain_nvcc_status
                    OUTPUT_QUIET ERROR_QUIET)
    if(DEFINED ENV{DTRAIN_WHEEL_CUDA_HOME})
      set(_dtrain_wheel_cuda "$ENV{DTRAIN_WHEEL_CUDA_HOME}")
    else()
      dtrain_home(_dtrain_wheel_cuda)
      string(APPEND _dtrain_wheel_cuda "/cuda-13.0")
    endif()
    if(NOT _dtrain_nvcc_status EQUAL 0 AND EXISTS "${_dtrain_wheel_cuda}/bin/nvcc")
      set(ENV{PATH} "${_dtrain_wheel_cuda}/bin:$ENV{PATH}")
      set(CMAKE_CUDA_COMPILER "${_dtrain_wheel_cuda}/bin/nvcc")
      message(STATUS "dtrain: no CUDA toolkit on PATH; the one from NVIDIA's wheels in "
                     "${_dtrain_wheel_cuda}")
    endif()
  endif()
endmacro()
