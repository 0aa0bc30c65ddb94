# Script mode, run after a test program is built (dtrain_add_gtest in
# tests/CMakeLists.txt): lists the program's GoogleTest cases and writes
# OUTPUT, a CTest file with one test per suite, each running every case of
# its suite in one process (Note [One process per test suite], below).
#
#   cmake -DPROGRAM=<test program> -DOUTPUT=<file> -DLABEL=<ctest label>
#         -DTIMEOUT=<seconds per case> -DWORKING_DIRECTORY=<dir> -P GTestSuites.cmake
#
# Note [One process per test suite]
# Starting a program on LibTorch takes ~0.6 s on the 2-core CI machine
# (loading libtorch_cpu and libtorch_cuda), longer than most unit tests
# themselves: with one process per test, 620 tests spent ~6 minutes of CPU
# on start-ups alone. So CTest runs each GoogleTest suite of these programs
# in one process, its cases in turn, as GoogleTest runs them anywhere else;
# each still starts at the same seed (tests/support/seed_each_test.cpp). A
# failure names its case in GoogleTest's output, which CTest prints. The
# GPU tests keep one process per test (ONE_PROCESS_PER_TEST in
# tests/CMakeLists.txt): there a crash in one case must not hide the others.
#
# Each test is named "<Suite>.*", its --gtest_filter, and may take TIMEOUT
# seconds for each of its cases: the program stops a case that runs longer
# (DTRAIN_TEST_CASE_TIMEOUT, support/case_timeout.cpp), CTest the suite past
# their sum. It shows as skipped when every case of the run skipped, which
# the programs say in one line (support/all_skipped.cpp).
foreach(required PROGRAM OUTPUT LABEL TIMEOUT WORKING_DIRECTORY)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "GTestSuites.cmake: -D${required}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND "${PROGRAM}" --gtest_list_tests
  WORKING_DIRECTORY "${WORKING_DIRECTORY}"
  TIMEOUT 60
  RESULT_VARIABLE status
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${status}):\n${listing}${errors}")
endif()

# The listing: "Suite." (parameterised: "Prefix/Suite.", typed: "Suite/0.",
# either may add "  # TypeParam = ...") on a line of its own, then each case
# as "  Case" (maybe "  # GetParam() = ..."). Other lines (gtest_main's
# "Running main() from ...") are neither.
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( +#.*)?$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set(cases_${suite} 0)
  elseif(suite AND line MATCHES "^  [A-Za-z_][A-Za-z0-9_/]*( +#.*)?$")
    math(EXPR cases_${suite} "${cases_${suite}} + 1")
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${PROGRAM} lists no GoogleTest suite:\n${listing}")
endif()

# The line support/all_skipped.cpp prints when every case of a run skipped.
set(all_skipped "dtrain-tests: every test of this run was skipped")
# Each test also carries the program's name as a label, so that a run of
# one program's tests is `ctest -L '^<program>$'` (scripts/sanitize.sh).
get_filename_component(program_name "${PROGRAM}" NAME)
set(content "# Written by cmake/GTestSuites.cmake from ${PROGRAM} --gtest_list_tests\n")
foreach(suite IN LISTS suites)
  math(EXPR timeout "${TIMEOUT} * ${cases_${suite}}")
  string(APPEND content
    "add_test([=[${suite}.*]=] [==[${PROGRAM}]==] [==[--gtest_filter=${suite}.*]==])\n"
    "set_tests_properties([=[${suite}.*]=] PROPERTIES LABELS [==[${LABEL};${program_name}]==] "
    "TIMEOUT ${timeout} ENVIRONMENT [==[DTRAIN_TEST_CASE_TIMEOUT=${TIMEOUT}]==] "
    "WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==] "
    "SKIP_REGULAR_EXPRESSION [==[${all_skipped}]==])\n")
endforeach()
file(WRITE "${OUTPUT}" "${content}")
