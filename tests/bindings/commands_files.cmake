# sbx.commands / sbx.files tests (test_commands*.lua, test_files*.lua in
# this folder), run by run_commands_files.py against a fresh abx-local
# with ABX_E2E_SELFTEST=1. Included by this folder's CMakeLists.txt.
foreach(group commands files)
  add_test(NAME bindings.${group}
           COMMAND ${ABX_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/run_commands_files.py ${group})
  set(env "ABX_E2E_BIN=$<TARGET_FILE:abx-e2e>"
          "ABX_LOCAL_BIN=$<TARGET_FILE:abx-local>"
          "ABX_TEMPLATES_DIR=${PROJECT_SOURCE_DIR}/abx-local/templates"
          "PYTHONDONTWRITEBYTECODE=1")
  if(TARGET abx-envd)
    list(APPEND env "ABX_ENVD_BIN=$<TARGET_FILE:abx-envd>")
  endif()
  set_tests_properties(bindings.${group} PROPERTIES ENVIRONMENT "${env}" TIMEOUT 280)
endforeach()
