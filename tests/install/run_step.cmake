# run_step(<description> <command>...): runs the command and stops the
# script, naming RUN_STEP_CONTEXT, the step and the command's output, when
# it fails; its output is left in step_output. Shared by the install tests.
function(run_step description)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${RUN_STEP_CONTEXT}: ${description} failed (${status}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
