# Installs the built SDK into a scratch prefix, then configures, builds and
# runs tests/install/consumer against it the way research code would:
# find_package(dtrain) and target_link_libraries(... dtrain::dtrain).
#
# Inputs: DTRAIN_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, TORCH_DIR, [CCACHE]
function(run_step description)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "install test: ${description} failed (${status}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run_step("installing dtrain" ${CMAKE_COMMAND} --install "${DTRAIN_BUILD_DIR}" --prefix "${prefix}")

set(launcher "")
if(CCACHE)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE}")
endif()
run_step("configuring the consumer" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build"
  -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" "-DTorch_DIR=${TORCH_DIR}" ${launcher})
run_step("building the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("running the consumer" "${WORK_DIR}/build/consumer")
if(NOT step_output MATCHES "consumer ok: dtrain [0-9.]+, 4/4 predictions counted")
  message(FATAL_ERROR "install test: unexpected consumer output:\n${step_output}")
endif()
message(STATUS "${step_output}")
