# Labels of every ctest case: where `make test` runs it and what it needs
# (docs/testing.md). Each tests/*/CMakeLists.txt defers abx_label_tests()
# to its end (set_tests_properties reaches only the current directory's
# tests), and tests/CMakeLists.txt calls it for its own.
#
# Where, one of:
#   sanitize     `make test` runs it on the ASan + UBSan build: the C it
#                exercises is ours (unit, fuzz replay, client, envd, local,
#                hostile, guarantees, runner, bindings, doctor, report, the
#                fc profile of the suite)
#   release      `make test` runs it on the release build: it needs speed,
#                or drives other programs' code, or checks text: the
#                official-SDK conformance, the e2b profile of the suite, the
#                gVisor runs, the soak, lints, doc examples, the template
#                servers' own tests and the template builder's tests
# What it needs, one of:
#   quick        no abx-local (a build and python3)
#   local        starts abx-local (root, bubblewrap, the template roots)
#   suite        a whole-suite run on abx-local
#   conformance  the official E2B SDK (npm) against abx-local
set(ABX_RELEASE_CASES
    "^(conformance|templates|lint|docs)\\.|gvisor|^suite\\.(local\\.e2b|local\\.vary|vary\\.loop|soak)$|^local\\.(rootfs|templates|fc_recipe)$")
# Seconds a case took at a49c7bb (release build, alone; the soak with
# its 60 s budget): ctest -j starts
# the long ones first; measured costs (CTestCostData.txt) replace these
# after a first run.
set(ABX_CASE_COSTS
    suite.soak=75 local.roots=85 suite.local.fc.gvisor=82 local.manystarts=47
    local.rootfs=50 local.hostile.e2b=47 local.hostile.fc=42 envd.compat=41
    suite.local.fc=39 suite.local.e2b=39 conformance.e2b-latest=30
    conformance.e2b-2.31.0=30 conformance.fc-e2b-2.31.0=30
    guarantees.sigkill=26 local.templates=26 lint.layers=20)

function(abx_label_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} LABELS labels)
    get_test_property(${t} ENVIRONMENT env)
    get_test_property(${t} FIXTURES_REQUIRED req)
    get_test_property(${t} FIXTURES_SETUP setup)
    if(NOT labels)
      set(labels)
    endif()
    if(t MATCHES "${ABX_RELEASE_CASES}")
      list(APPEND labels release)
    else()
      list(APPEND labels sanitize)
    endif()
    if(t MATCHES "^conformance\\.")
      set(kind conformance)
    elseif(t MATCHES "^suite\\.(local\\.|soak$)")
      set(kind suite)
    elseif("${env}" MATCHES "ABX_LOCAL_BIN=" OR "${req};${setup}" MATCHES "abx_roots")
      set(kind local)
    else()
      set(kind quick)
    endif()
    list(APPEND labels ${kind})
    list(REMOVE_DUPLICATES labels)
    set_tests_properties(${t} PROPERTIES LABELS "${labels}")
    foreach(pair IN LISTS ABX_CASE_COSTS)
      if(pair MATCHES "^([^=]+)=(.*)$" AND CMAKE_MATCH_1 STREQUAL t)
        set_tests_properties(${t} PROPERTIES COST ${CMAKE_MATCH_2})
      endif()
    endforeach()
  endforeach()
endfunction()
