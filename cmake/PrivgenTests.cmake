# privgen_check_test(<name> <source> [LIBS libs...] [TIMEOUT s] [LABELS l...])
# One Check suite per test source. Every suite is registered in CTest with a
# timeout so a hung test fails instead of stalling CI.

# privgen_test_executable(<name> <source> [libs...]): a Check test binary in
# build/tests, built like every other. The source tree is compiled in
# (PRIVGEN_SOURCE_DIR_DEFAULT, read through pg_test_source_dir() of
# tests/support/pg_test.h), so a binary run by hand finds openapi.yaml,
# scripts/ and its fixtures without PRIVGEN_SOURCE_DIR; the environment
# (ctest sets it) still overrides.
function(privgen_test_executable name source)
  add_executable(${name} ${source})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARGN} PkgConfig::CHECK m)
  target_compile_definitions(${name} PRIVATE PRIVGEN_SOURCE_DIR_DEFAULT="${CMAKE_SOURCE_DIR}")
  privgen_warnings(${name})
endfunction()

function(privgen_check_test name source)
  cmake_parse_arguments(T "" "TIMEOUT" "LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  privgen_test_executable(${name} ${source} ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  # ctest -j runs suites side by side: passive OpenMP waiting keeps two suites
  # of two threads each from spinning against each other on a 2-core machine.
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "CK_DEFAULT_TIMEOUT=${T_TIMEOUT};OMP_NUM_THREADS=2;OMP_WAIT_POLICY=passive;PRIVGEN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
