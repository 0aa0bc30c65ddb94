# Third-party packages. LibTorch comes from the PyPI torch wheel (pass
# torch.utils.cmake_prefix_path in CMAKE_PREFIX_PATH); the rest from Debian.
if(NOT DTRAIN_WITH_CUDA)
  # Keep Torch's config from looking for a toolkit we decided not to use.
  set(CAFFE2_USE_CUDA OFF)
endif()
find_package(Torch REQUIRED)
include(DtrainTorchIncludes)
dtrain_hide_torch_fmt()
dtrain_put_libstdcxx_first()
get_filename_component(DTRAIN_TORCH_LIB_DIR "${TORCH_LIBRARY}" DIRECTORY)
message(STATUS "dtrain: LibTorch ${Torch_VERSION} from ${DTRAIN_TORCH_LIB_DIR}")

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C CXX)

set(DTRAIN_WITH_MPI OFF)
if(NOT DTRAIN_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(DTRAIN_WITH_MPI ON)
  elseif(DTRAIN_MPI STREQUAL "ON")
    message(FATAL_ERROR "DTRAIN_MPI=ON but OpenMPI was not found (apt-get install libopenmpi-dev)")
  endif()
endif()

if(DTRAIN_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
