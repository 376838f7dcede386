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

# attnc_add_model(<target> MODEL <file.attn> [TARGET <halide target>]
#                 [MODEL_NAME <name>] [TUNING_DB <file>])
# Compiles a model with `attnc compile` at build time into
# lib<target>.a + <target>.h (C entry points <target>_weights_bind and
# <target>_run) and defines <target>, an INTERFACE library that links the
# kernel, the attnc runtime and the system libraries it needs. TARGET
# defaults to host; MODEL_NAME picks a model when the file defines several;
# TUNING_DB compiles with the fastest schedules of a tuning database (an
# SQLite file of `attnc tune`, or its JSON export).
function(attnc_add_model target)
  cmake_parse_arguments(ARG "" "MODEL;TARGET;MODEL_NAME;TUNING_DB" "" ${ARGN})
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "attnc_add_model(${target}): MODEL <file.attn> is required")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET host)
  endif()
  get_filename_component(model_path "${ARG_MODEL}" ABSOLUTE)
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.attnc")
  set(library "${out_dir}/lib${target}.a")
  set(model_option "")
  if(ARG_MODEL_NAME)
    set(model_option --model ${ARG_MODEL_NAME})
  endif()
  # TUNING_DB: the fastest schedules a tuning database (attnc tune --db)
  # recorded for the model's kernels (docs/tuning.md); a new database
  # rebuilds the library. A `.json` file (`attnc db export`, how tuned
  # configurations are shipped in a repository) is imported into a database
  # in the build tree first.
  set(tuning_option "")
  set(tuning_depends "")
  if(ARG_TUNING_DB)
    get_filename_component(tuning_path "${ARG_TUNING_DB}" ABSOLUTE)
    if(tuning_path MATCHES "\\.json$")
      set(tuning_json "${tuning_path}")
      set(tuning_path "${out_dir}/tuning.db")
      add_custom_command(
        OUTPUT "${tuning_path}"
        COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
        COMMAND ${CMAKE_COMMAND} -E rm -f "${tuning_path}"
                "${tuning_path}-wal" "${tuning_path}-shm"
        COMMAND attnc db import "${tuning_path}" "${tuning_json}"
        DEPENDS attnc "${tuning_json}"
        COMMENT "attnc: importing the tuning configurations ${ARG_TUNING_DB}"
        VERBATIM)
    endif()
    set(tuning_option --tuning-db "${tuning_path}")
    set(tuning_depends "${tuning_path}")
  endif()
  add_custom_command(
    OUTPUT "${library}" "${out_dir}/${target}.h" "${out_dir}/${target}_kernel.h"
    COMMAND attnc compile "${model_path}" ${model_option} ${tuning_option}
            --target ${ARG_TARGET} --name ${target} -o "${out_dir}"
    DEPENDS attnc "${model_path}" ${tuning_depends}
    COMMENT "attnc: compiling ${ARG_MODEL} for ${ARG_TARGET}"
    VERBATIM)
  add_custom_target(${target}_attnc DEPENDS "${library}")
  find_package(Threads REQUIRED)
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_attnc)
  target_include_directories(${target} INTERFACE "${out_dir}"
    "${PROJECT_SOURCE_DIR}/runtime" "${ATTNC_HALIDE_INCLUDE_DIR}")
  target_link_libraries(${target} INTERFACE "${library}" AttnRuntime
    Threads::Threads ${CMAKE_DL_LIBS})
endfunction()
