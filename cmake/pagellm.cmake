# Helpers that keep every folder's CMakeLists.txt to a few lines.
#
#   pagellm_library(NAME SOURCES a.cc b.cc DEPS other_lib ...)
#     -> static library pagellm_NAME (alias pagellm::NAME), include root src/.
#   pagellm_test(NAME SOURCES a_test.cc DEPS pagellm::x)
#     -> gtest binary NAME, registered with CTest test by test.
function(pagellm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(pagellm_${name} STATIC ${ARG_SOURCES})
  add_library(pagellm::${name} ALIAS pagellm_${name})
  target_include_directories(pagellm_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(pagellm_${name} PUBLIC ${ARG_DEPS})
endfunction()

# Every test binary gets a private TEST_TMPDIR (tests/support/test_main.cc).
add_library(pagellm_test_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/test_main.cc)
target_link_libraries(pagellm_test_main PUBLIC GTest::gtest)

function(pagellm_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} pagellm_test_main GTest::gtest)
  target_compile_definitions(${name} PRIVATE
    PAGELLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PAGELLM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # Passive OpenMP waits: two test processes of 2 threads share the 2 cores under
  # ctest -j 2, and spinning barriers then make a step 10x slower or worse (the pagellm
  # binary bounds its spin instead, cli/main.cc, since it usually owns its cores). One variable per property: gtest_discover_tests splits
  # a list value ("A=1;B=2") into separate properties.
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
    PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=2" ENVIRONMENT_MODIFICATION "OMP_WAIT_POLICY=set:PASSIVE")
endfunction()
