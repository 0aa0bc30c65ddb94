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

# How dtrain's libraries link LibTorch. TORCH_LIBRARIES holds this machine's
# absolute paths (libc10.so, libc10_cuda.so, libnvrtc.so beside the
# targets), which an installed package must not carry to the machines that
# use it: the build links them through dtrain_torch_libraries, and the
# installed targets name dtrain::torch_libraries, which dtrainConfig.cmake
# makes from the TORCH_LIBRARIES of the consumer's own find_package(Torch).
add_library(dtrain_torch_libraries INTERFACE)
target_link_libraries(dtrain_torch_libraries INTERFACE ${TORCH_LIBRARIES})
set(DTRAIN_TORCH_LINK
  $<BUILD_INTERFACE:dtrain_torch_libraries> $<INSTALL_INTERFACE:dtrain::torch_libraries>)

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)

# HDF5 is for the dataset readers of ModelNet40 and ShapeNet-Part; a build
# that needs none of them (the GPU machine's, tests/gpu/) can go without.
set(DTRAIN_WITH_HDF5 OFF)
if(DTRAIN_HDF5 STREQUAL "ON")
  find_package(HDF5 REQUIRED COMPONENTS C CXX)
  set(DTRAIN_WITH_HDF5 ON)
elseif(DTRAIN_HDF5 STREQUAL "AUTO")
  find_package(HDF5 COMPONENTS C CXX)
  set(DTRAIN_WITH_HDF5 ${HDF5_FOUND})
endif()

set(DTRAIN_WITH_MPI OFF)
if(NOT DTRAIN_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(DTRAIN_WITH_MPI ON)
  elseif(DTRAIN_MPI STREQUAL "ON")
    message(FATAL_ERROR "DTRAIN_MPI=ON but OpenMPI was not found (apt-get install libopenmpi-dev)")
  endif()
endif()

# Note [LibTorch's bundled protobuf]
# Protobuf (Debian's libprotobuf-dev and protoc) writes TensorBoard's event
# files; a build without it (the GPU machine's image) gets a writer that
# says so. Looked for after LibTorch: Caffe2's config makes
# protobuf::libprotobuf a dummy target only when none exists, and a real
# one would link every LibTorch program to libprotobuf. dtrain links the
# lite runtime, and compiles the files that include protobuf's headers
# without LibTorch's include root, which holds an older protobuf's.
set(DTRAIN_WITH_PROTOBUF OFF)
find_package(Protobuf)
if(TARGET protobuf::libprotobuf-lite AND Protobuf_PROTOC_EXECUTABLE)
  set(DTRAIN_WITH_PROTOBUF ON)
  message(STATUS "dtrain: Protobuf ${Protobuf_VERSION}: --tensorboard writes event files")
else()
  message(STATUS "dtrain: no Protobuf (libprotobuf-dev, protobuf-compiler): --tensorboard "
    "will say it is unavailable")
endif()

# yaml-cpp (Debian's libyaml-cpp-dev) reads and writes run configs, the
# YAML a run writes beside its report and --config reads back
# (dtrain/train/run_config.h); a build without it (the GPU machine's image)
# refuses --config and writes none, saying why.
find_package(yaml-cpp QUIET)
set(DTRAIN_WITH_YAML_CPP ${yaml-cpp_FOUND})
if(DTRAIN_WITH_YAML_CPP)
  message(STATUS "dtrain: yaml-cpp ${yaml-cpp_VERSION}: run configs (--config)")
else()
  message(STATUS "dtrain: no yaml-cpp (libyaml-cpp-dev): --config will say it is unavailable")
endif()

# NCCL for the nccl backend, from the CUDA toolkit. At run time the process
# uses whichever libnccl.so.2 loads first -- often the torch wheel's own
# (docs/libtorch.md, "One libnccl.so.2 per process").
if(DTRAIN_WITH_CUDA)
  find_path(DTRAIN_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} "${CUDAToolkit_LIBRARY_ROOT}/include")
  find_library(DTRAIN_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} "${CUDAToolkit_LIBRARY_ROOT}/lib64" "${CUDAToolkit_LIBRARY_ROOT}/lib")
  if(NOT DTRAIN_NCCL_INCLUDE_DIR OR NOT DTRAIN_NCCL_LIBRARY)
    message(FATAL_ERROR "dtrain: CUDA is on but NCCL was not found beside the CUDA toolkit "
      "(${CUDAToolkit_LIBRARY_ROOT}): nccl.h -> '${DTRAIN_NCCL_INCLUDE_DIR}', "
      "libnccl.so -> '${DTRAIN_NCCL_LIBRARY}'; install NCCL or set DTRAIN_CUDA=OFF")
  endif()
  file(READ "${DTRAIN_NCCL_INCLUDE_DIR}/nccl.h" _dtrain_nccl_header LIMIT 4096)
  set(_dtrain_nccl_version "")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "#define NCCL_${part} +([0-9]+)" _ "${_dtrain_nccl_header}")
    list(APPEND _dtrain_nccl_version "${CMAKE_MATCH_1}")
  endforeach()
  string(JOIN "." _dtrain_nccl_version ${_dtrain_nccl_version})
  add_library(dtrain::nccl UNKNOWN IMPORTED)
  set_target_properties(dtrain::nccl PROPERTIES
    IMPORTED_LOCATION "${DTRAIN_NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${DTRAIN_NCCL_INCLUDE_DIR}")
  message(STATUS "dtrain: NCCL ${_dtrain_nccl_version} from ${DTRAIN_NCCL_LIBRARY}")
endif()

if(DTRAIN_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
