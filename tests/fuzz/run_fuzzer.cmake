# Builds a libFuzzer target with clang (ASan + UBSan) and runs it for a
# bounded time. Inputs: CLANGXX, SOURCES (separated by |), INCLUDE_DIR,
# WORK_DIR, SECONDS.
string(REPLACE "|" ";" SOURCES "${SOURCES}")
file(MAKE_DIRECTORY "${WORK_DIR}/corpus")
set(binary "${WORK_DIR}/fuzzer")
execute_process(
  COMMAND "${CLANGXX}" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
          -fno-sanitize-recover=all -I "${INCLUDE_DIR}" ${SOURCES} -o "${binary}"
  RESULT_VARIABLE status ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "building the fuzzer failed:\n${errors}")
endif()
execute_process(
  COMMAND "${binary}" -max_total_time=${SECONDS} -max_len=4096 -seed=1 "${WORK_DIR}/corpus"
  RESULT_VARIABLE status ERROR_VARIABLE log)
string(REGEX MATCH "Done [0-9]+ runs" runs "${log}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a failure:\n${log}")
endif()
message(STATUS "fuzzer: ${runs} in ${SECONDS} s without a failure")
