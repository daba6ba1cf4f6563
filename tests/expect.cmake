# Runs EXE with ARGS (a ;-list) and checks the outcome: EXPECT=failure needs a non-zero exit code,
# EXPECT=success a zero one; in both cases stdout+stderr must match REGEX. Prints the output on
# mismatch. Used by lrhost_expect_failure / lrhost_expect_success in tests/CMakeLists.txt.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
set(text "${out}${err}")
if(EXPECT STREQUAL "failure" AND code EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit code, got 0. Output:\n${text}")
endif()
if(EXPECT STREQUAL "success" AND NOT code EQUAL 0)
  message(FATAL_ERROR "expected exit code 0, got ${code}. Output:\n${text}")
endif()
if(NOT text MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}'. Exit code ${code}. Output:\n${text}")
endif()
if(text MATCHES "Segmentation fault|core dumped|terminate called|Aborted")
  message(FATAL_ERROR "the process crashed instead of failing cleanly. Output:\n${text}")
endif()
message(STATUS "ok: exit ${code}, output matches '${REGEX}'")
