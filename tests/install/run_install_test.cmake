# Installs the built SDK into a scratch prefix, then configures, builds and
# runs tests/install/consumer against it the way research code would, as
# the README says: find_package(dtrain) with the prefix and LibTorch's on
# CMAKE_PREFIX_PATH, target_link_libraries(... dtrain::dtrain); then runs it
# as two processes under the installed dtrun (Gloo and DDP from the install).
#
# Inputs: DTRAIN_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, TORCH_DIR, [CCACHE]
set(RUN_STEP_CONTEXT "install test")
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run_step("installing dtrain" ${CMAKE_COMMAND} --install "${DTRAIN_BUILD_DIR}" --prefix "${prefix}")

set(launcher "")
if(CCACHE)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE}")
endif()
# The two prefixes go through the environment's CMAKE_PREFIX_PATH: a
# ";"-list would be split apart on its way through run_step's ARGN.
run_step("configuring the consumer" ${CMAKE_COMMAND} -E env
  "CMAKE_PREFIX_PATH=${prefix}:${TORCH_DIR}/.." ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}"
  -B "${WORK_DIR}/build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${launcher})
run_step("building the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("running the consumer" "${WORK_DIR}/build/consumer")
if(NOT step_output MATCHES "consumer ok: dtrain [0-9.]+, 4/4 predictions counted")
  message(FATAL_ERROR "install test: unexpected consumer output:\n${step_output}")
endif()
message(STATUS "${step_output}")
run_step("running the consumer under the installed dtrun" "${prefix}/bin/dtrun" --standalone
  --nproc-per-node 2 "${WORK_DIR}/build/consumer")
foreach(rank 0 1)
  if(NOT step_output MATCHES "consumer ddp ok: rank ${rank} of 2")
    message(FATAL_ERROR "install test: rank ${rank} did not report under dtrun:\n${step_output}")
  endif()
endforeach()
message(STATUS "${step_output}")
