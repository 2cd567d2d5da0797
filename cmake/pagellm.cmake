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

function(pagellm_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    PAGELLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PAGELLM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
    PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=2")
endfunction()
