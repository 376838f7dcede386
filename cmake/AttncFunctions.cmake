#===- cmake/AttncFunctions.cmake - small helpers for attnc's build --------===#
#
# Functions (never macros) shared by the folders of attnc.
#
#===----------------------------------------------------------------------===#

# attn_add_unittest(<name> SOURCES <files...> LIBS <targets...>)
# Builds a GoogleTest executable and registers it with CTest.
function(attn_add_unittest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_options(${name} PRIVATE ${ATTNC_NO_RTTI_FLAGS})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()
