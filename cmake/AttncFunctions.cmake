#===- cmake/AttncFunctions.cmake - small helpers for attnc's build --------===#
#
# Functions (never macros) shared by the folders of attnc.
#
#===----------------------------------------------------------------------===#

# attnc_precompile_headers(<target> [HALIDE] [HEADERS <headers...>])
# Parses MLIR's most used headers (and Halide.h with HALIDE, and any
# HEADERS) once for all of <target>'s files: they are most of each file's
# compile time (a codegen file: 12 s without, 3 s with).
function(attnc_precompile_headers target)
  cmake_parse_arguments(ARG "HALIDE" "" "HEADERS" ${ARGN})
  set(headers <mlir/IR/BuiltinOps.h> <mlir/IR/Builders.h>
              <mlir/IR/OpDefinition.h> <mlir/IR/PatternMatch.h>
              <mlir/Dialect/Func/IR/FuncOps.h> <mlir/Dialect/Arith/IR/Arith.h>)
  if(ARG_HALIDE)
    list(PREPEND headers <Halide.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers} ${ARG_HEADERS})
endfunction()

# attn_add_unittest(<name> SOURCES <files...> LIBS <targets...>
#                   [LABELS <labels...>])
# Builds a GoogleTest executable and registers its cases with CTest, with
# LABELS on each (`fast`: the suites scripts/test-sanitized.sh runs). Every
# suite links gmock: the tests include gmock.h, and a matcher used without
# the library links in an optimised build only by luck (issue #9, item 5).
function(attn_add_unittest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest
                        GTest::gtest_main)
  target_compile_options(${name} PRIVATE ${ATTNC_NO_RTTI_FLAGS})
  # One compile cache for the suites, in the build tree (ATTNC_CACHE_DIR):
  # the tests share their kernels and leave the user's cache alone.
  set(environment "ATTNC_CACHE_DIR=${CMAKE_BINARY_DIR}/attnc-cache")
  if(ARG_LABELS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
      PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${environment}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
      PROPERTIES ENVIRONMENT "${environment}")
  endif()
endfunction()

# attnc_add_model: in cmake/AttncAddModel.cmake, which is also installed
# with the package (find_package(attnc)).
include(${CMAKE_CURRENT_LIST_DIR}/AttncAddModel.cmake)
