# abx_script_test(NAME SCRIPT TIMEOUT [LOCK lock] [ENV NAME=VALUE...]): a
# Python script of the calling folder (SCRIPT.py) that drives abx-e2e
# (--bin) against abx-local from the source root: two workers, after the
# template roots are built (docs/testing.md).
function(abx_script_test name script timeout)
  cmake_parse_arguments(A "" "LOCK" "ENV" ${ARGN})
  add_test(NAME ${name}
           COMMAND ${ABX_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/${script}.py
                   --bin $<TARGET_FILE:abx-e2e>
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set(env "ABX_LOCAL_BIN=$<TARGET_FILE:abx-local>" "ABX_ENVD_BIN=$<TARGET_FILE:abx-envd>"
      "PYTHONDONTWRITEBYTECODE=1" ${A_ENV})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} PROCESSORS 2
    FIXTURES_REQUIRED abx_roots ENVIRONMENT "${env}")
  if(A_LOCK)
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK ${A_LOCK})
  endif()
endfunction()
