# support/case_timeout.cpp, through its probe program: with a limit of 1 s a
# case that ends in time passes, and one that outlives it is stopped within
# seconds, named with its limit, and the process it started is killed too.
#
#   cmake -DPROBE=<case_timeout_probe> -DWORK_DIR=<scratch> -P test_case_timeout.cmake
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(pid_file "${WORK_DIR}/child.pid")

function(run_probe filter)
  string(TIMESTAMP start "%s")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env DTRAIN_TEST_CASE_TIMEOUT=1
            "DTRAIN_PROBE_CHILD_PID_FILE=${pid_file}" "${PROBE}" "--gtest_filter=${filter}"
    TIMEOUT 30
    RESULT_VARIABLE status
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  set(status "${status}" PARENT_SCOPE)
  set(output "${out}${err}" PARENT_SCOPE)
  set(seconds "${seconds}" PARENT_SCOPE)
endfunction()

run_probe(CaseTimeoutProbe.FinishesInTime)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "a case within its limit failed (${status}):\n${output}")
endif()

run_probe(CaseTimeoutProbe.OutlivesItsLimit)
if(status EQUAL 0)
  message(FATAL_ERROR "a case past its limit passed:\n${output}")
endif()
set(expected "[  TIMEOUT ] CaseTimeoutProbe.OutlivesItsLimit ran past its limit of 1 s")
string(FIND "${output}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "no line '${expected}' (status ${status}):\n${output}")
endif()
if(seconds GREATER 10)
  message(FATAL_ERROR "the case ran ${seconds} s past a limit of 1 s:\n${output}")
endif()
file(READ "${pid_file}" child)
string(STRIP "${child}" child)
# The killed child, reparented, is reaped at once; give it a moment.
foreach(attempt RANGE 20)
  if(NOT EXISTS "/proc/${child}")
    break()
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 0.1)
endforeach()
if(EXISTS "/proc/${child}")
  message(FATAL_ERROR "the case's child process ${child} outlived it")
endif()
message(STATUS "stopped after ${seconds} s, child ${child} gone")
