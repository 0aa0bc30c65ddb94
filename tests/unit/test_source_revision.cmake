# cmake/SourceRevision.cmake on a throwaway git repository: the revision a
# build reports (util::BuildInfo::source_revision) for a clean tree, for
# edited ones, without git, and that an unchanged tree's header is left
# alone (so it recompiles nothing).
#
#   cmake -DSCRIPT=<SourceRevision.cmake> -DWORK_DIR=<scratch> -P test_source_revision.cmake
cmake_minimum_required(VERSION 3.25)

find_program(GIT git REQUIRED)
file(REMOVE_RECURSE "${WORK_DIR}")
set(repo "${WORK_DIR}/repo")
set(plain "${WORK_DIR}/plain")
set(header "${WORK_DIR}/revision.h")
file(MAKE_DIRECTORY "${repo}" "${plain}")
# The scratch folder lies inside dtrain's own work tree: git must not find
# that repository from `plain`.
set(ENV{GIT_CEILING_DIRECTORIES} "${WORK_DIR}")

function(git)
  execute_process(COMMAND "${GIT}" -c user.name=dtrain -c user.email=dtrain@localhost
                          -c commit.gpgsign=false ${ARGN}
                  WORKING_DIRECTORY "${repo}" RESULT_VARIABLE status
                  OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "git ${ARGN} failed: ${err}")
  endif()
  set(git_output "${out}" PARENT_SCOPE)
endfunction()

# Runs the script on `dir` and sets `out_var` to the revision it wrote.
function(revision_of dir out_var)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${dir} -DOUTPUT=${header}
                          -P "${SCRIPT}"
                  RESULT_VARIABLE status ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "SourceRevision.cmake failed on ${dir}: ${err}")
  endif()
  file(READ "${header}" content)
  if(NOT content MATCHES "#define DTRAIN_SOURCE_REVISION \"([^\"]*)\"")
    message(FATAL_ERROR "no DTRAIN_SOURCE_REVISION in:\n${content}")
  endif()
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

function(expect_equal actual expected what)
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "${what}: got '${actual}', expected '${expected}'")
  endif()
endfunction()

revision_of("${plain}" outside)
expect_equal("${outside}" "unknown" "outside a git work tree")

file(WRITE "${repo}/kernel.cpp" "int answer() { return 42; }\n")
git(init -q)
git(add kernel.cpp)
git(commit -q -m first)
git(rev-parse --short=12 HEAD)
set(first_commit "${git_output}")
revision_of("${repo}" clean)
expect_equal("${clean}" "${first_commit}" "a clean tree")

# Unchanged: the header keeps its time stamp (1 s resolution, hence the wait).
file(TIMESTAMP "${header}" before "%s")
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.2)
revision_of("${repo}" again)
file(TIMESTAMP "${header}" after "%s")
expect_equal("${again}" "${clean}" "the same tree again")
expect_equal("${after}" "${before}" "the header's time stamp for an unchanged tree")

file(WRITE "${repo}/kernel.cpp" "int answer() { return 43; }\n")
revision_of("${repo}" edit_one)
# (CMake's regular expressions have no {8}.)
if(NOT edit_one MATCHES "^${first_commit}-dirty\\.[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]$")
  message(FATAL_ERROR "an edited tree: got '${edit_one}', expected ${first_commit}-dirty.<hash>")
endif()
file(WRITE "${repo}/kernel.cpp" "int answer() { return 44; }\n")
revision_of("${repo}" edit_two)
if(edit_two STREQUAL edit_one OR NOT edit_two MATCHES "^${first_commit}-dirty\\.")
  message(FATAL_ERROR "another edit of the same commit: got '${edit_two}', "
                      "expected a -dirty hash other than '${edit_one}'")
endif()
file(WRITE "${repo}/kernel.cpp" "int answer() { return 43; }\n")
revision_of("${repo}" edit_one_again)
expect_equal("${edit_one_again}" "${edit_one}" "the first edit made again")

# Files git does not track are not part of the revision.
file(WRITE "${repo}/kernel.cpp" "int answer() { return 42; }\n")
file(WRITE "${repo}/notes.txt" "scratch\n")
revision_of("${repo}" untracked)
expect_equal("${untracked}" "${first_commit}" "a clean tree with an untracked file")

file(WRITE "${repo}/kernel.cpp" "int answer() { return 45; }\n")
git(commit -q -a -m second)
git(rev-parse --short=12 HEAD)
revision_of("${repo}" committed)
expect_equal("${committed}" "${git_output}" "the next commit")

file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "SourceRevision.cmake: all cases passed")
