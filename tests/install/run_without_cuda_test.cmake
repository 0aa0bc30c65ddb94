# Configures dtrain with DTRAIN_CUDA=OFF beside a build that has CUDA and
# compiles src/no_cuda.cpp there, then checks that it defines every CUDA
# entry point src/dispatch.h declares (a *_cuda function): a machine
# without nvcc builds exactly this, and a function missing there would
# link (a shared library may leave symbols undefined) and fail only when
# the library is loaded. The main build never configures LibTorch's CUDA
# wheel without dtrain's CUDA setup, nor compiles no_cuda.cpp; only the
# one file is compiled here, to keep CI short.
#
# Inputs: SOURCE_DIR, WORK_DIR, TORCH_PREFIX, NM, [CCACHE_ON]
set(RUN_STEP_CONTEXT "build without CUDA")
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

file(REMOVE_RECURSE "${WORK_DIR}")
run_step("configuring with DTRAIN_CUDA=OFF" ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}"
  -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_PREFIX_PATH=${TORCH_PREFIX}"
  -DDTRAIN_CUDA=OFF -DDTRAIN_MPI=OFF -DDTRAIN_HDF5=AUTO -DDTRAIN_BUILD_TESTS=OFF
  -DDTRAIN_BUILD_BENCHMARKS=OFF "-DDTRAIN_USE_CCACHE=${CCACHE_ON}")
if(step_output MATCHES "dtrain: CUDA ")
  message(FATAL_ERROR "build without CUDA: DTRAIN_CUDA=OFF still enabled CUDA:\n${step_output}")
endif()
set(object "kernels/CMakeFiles/dtrain_kernels.dir/src/no_cuda.cpp.o")
run_step("compiling src/no_cuda.cpp" ${CMAKE_COMMAND} --build "${WORK_DIR}" --target "${object}")
run_step("listing its symbols" "${NM}" -C --defined-only "${WORK_DIR}/${object}")
set(defined "${step_output}")

file(STRINGS "${SOURCE_DIR}/kernels/src/dispatch.h" declarations REGEX "[a-z0-9_]+_cuda[a-z0-9_]*\\(")
set(missing "")
set(checked 0)
foreach(line IN LISTS declarations)
  string(REGEX MATCH "([a-z0-9_]+_cuda[a-z0-9_]*)\\(" _ "${line}")
  set(name "${CMAKE_MATCH_1}")
  math(EXPR checked "${checked} + 1")
  # The name, then its parameters or an ABI tag ("[abi:cxx11]" where it
  # returns a std::string).
  if(NOT defined MATCHES " dtrain::kernels::detail::${name}[([]")
    list(APPEND missing "${name}")
  endif()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "build without CUDA: no *_cuda declaration found in src/dispatch.h")
endif()
if(missing)
  message(FATAL_ERROR "build without CUDA: src/no_cuda.cpp does not define ${missing}, "
                      "declared in src/dispatch.h")
endif()
message(STATUS "src/no_cuda.cpp defines all ${checked} CUDA entry points of src/dispatch.h")
