#===- cmake/AttncAddModel.cmake - attnc_add_model ------------------------===#
#
# The CMake function applications call to compile a model into a library at
# build time. attnc's own build includes it (examples/app), and so does the
# installed package: find_package(attnc CONFIG) gives attnc_add_model and
# the targets it uses, attnc::attnc (the compiler) and attnc::runtime (the
# runtime library and its headers, attn_runtime.h and attn_runtime.hpp).
# In attnc's build those two are aliases of its own targets.
#
#===----------------------------------------------------------------------===#

# attnc_add_model(<target> MODEL <file.attn> [TARGET <halide target>]
#                 [MODEL_NAME <name>] [TUNING_DB <file>] [DECODE])
# Compiles a model with `attnc compile` at build time into
# lib<target>.a + <target>.h (C entry points <target>_weights_bind and
# <target>_run) and defines <target>, an INTERFACE library that links the
# kernel, the attnc runtime and the system libraries it needs. TARGET
# defaults to host; MODEL_NAME picks a model when the file defines several;
# TUNING_DB compiles with the fastest schedules of a tuning database (an
# SQLite file of `attnc tune`, or its JSON export). DECODE also compiles
# incremental decoding of a causal model (`attnc compile --decode`:
# <target>_state_new, <target>_prefill, <target>_step).
function(attnc_add_model target)
  cmake_parse_arguments(ARG "DECODE" "MODEL;TARGET;MODEL_NAME;TUNING_DB" ""
                        ${ARGN})
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
        COMMAND attnc::attnc db import "${tuning_path}" "${tuning_json}"
        DEPENDS attnc::attnc "${tuning_json}"
        COMMENT "attnc: importing the tuning configurations ${ARG_TUNING_DB}"
        VERBATIM)
    endif()
    set(tuning_option --tuning-db "${tuning_path}")
    set(tuning_depends "${tuning_path}")
  endif()
  set(decode_option "")
  if(ARG_DECODE)
    set(decode_option --decode)
  endif()
  add_custom_command(
    OUTPUT "${library}" "${out_dir}/${target}.h" "${out_dir}/${target}_kernel.h"
    COMMAND attnc::attnc compile "${model_path}" ${model_option} ${tuning_option}
            ${decode_option}
            --target ${ARG_TARGET} --name ${target} -o "${out_dir}"
    DEPENDS attnc::attnc "${model_path}" ${tuning_depends}
    COMMENT "attnc: compiling ${ARG_MODEL} for ${ARG_TARGET}"
    VERBATIM)
  add_custom_target(${target}_attnc DEPENDS "${library}")
  find_package(Threads REQUIRED)
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_attnc)
  target_include_directories(${target} INTERFACE "${out_dir}")
  target_link_libraries(${target} INTERFACE "${library}" attnc::runtime
    Threads::Threads ${CMAKE_DL_LIBS})
endfunction()
