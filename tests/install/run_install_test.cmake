# Installs the built SDK into a scratch prefix, then configures, builds and
# runs tests/install/consumer against it the way research code would, as
# the README says: find_package(dtrain) with the prefix and LibTorch's on
# CMAKE_PREFIX_PATH, target_link_libraries(... dtrain::dtrain); then runs it
# as two processes under the installed dtrun (Gloo and DDP from the install);
# and research code on the installed Trainer (TRAINER_PROGRAM, the
# example apps/examples/train_tiny_pointnet.cpp), its 6 epochs by two
# processes, which must write its report.
#
# Inputs: DTRAIN_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, TORCH_DIR, TRAINER_PROGRAM, [CCACHE]
set(RUN_STEP_CONTEXT "install test")
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run_step("installing dtrain" ${CMAKE_COMMAND} --install "${DTRAIN_BUILD_DIR}" --prefix "${prefix}")
# The installed targets name their dependencies as targets (LibTorch's as
# dtrain::torch_libraries, made by the consumer's config), never a path of
# the machine that built them.
file(READ "${prefix}/lib/cmake/dtrain/dtrainTargets.cmake" targets)
if(targets MATCHES "INTERFACE_LINK_LIBRARIES \"([^\"]*;)?/[^\";]*")
  message(FATAL_ERROR "install test: an installed target links a path of the build machine: "
    "${CMAKE_MATCH_0}")
endif()
if(NOT targets MATCHES "INTERFACE_LINK_LIBRARIES \"[^\"]*dtrain::torch_libraries")
  message(FATAL_ERROR "install test: no installed target links dtrain::torch_libraries")
endif()

# A LibTorch of another release is refused by name at configure time (its
# C++ ABI differs): a stand-in package that says it is 2.0.0, alone on the
# prefix path.
set(other_torch "${WORK_DIR}/other-torch/share/cmake/Torch")
file(WRITE "${other_torch}/TorchConfigVersion.cmake"
  "set(PACKAGE_VERSION 2.0.0)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n")
file(WRITE "${other_torch}/TorchConfig.cmake" "set(Torch_FOUND TRUE)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E env
  "CMAKE_PREFIX_PATH=${prefix}:${WORK_DIR}/other-torch" ${CMAKE_COMMAND}
  -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build-other-torch" -G Ninja
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(status EQUAL 0 OR NOT out MATCHES "Torch" OR NOT out MATCHES "2\\.0\\.0")
  message(FATAL_ERROR "install test: a LibTorch 2.0.0 was not refused by name (${status}):\n${out}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}/build-other-torch")

set(launcher "")
if(CCACHE)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE}")
endif()
# The two prefixes go through the environment's CMAKE_PREFIX_PATH: a
# ";"-list would be split apart on its way through run_step's ARGN.
run_step("configuring the consumer" ${CMAKE_COMMAND} -E env
  "CMAKE_PREFIX_PATH=${prefix}:${TORCH_DIR}/.." ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}"
  -B "${WORK_DIR}/build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${launcher}
  "-DDTRAIN_TRAINER_PROGRAM=${TRAINER_PROGRAM}")
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
run_step("running the Trainer program under the installed dtrun" "${prefix}/bin/dtrun"
  --standalone --nproc-per-node 2 "${WORK_DIR}/build/trainer_program"
  "${WORK_DIR}/trainer_program.csv")
file(STRINGS "${WORK_DIR}/trainer_program.csv" report)
list(LENGTH report rows)
if(NOT rows EQUAL 7 OR NOT report MATCHES "^epoch,samples,.*;1,400,")
  message(FATAL_ERROR "install test: the Trainer program's report is not 6 epochs of 400 "
    "clouds:\n${report}\n${step_output}")
endif()
message(STATUS "${report}")
