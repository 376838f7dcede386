#===- RunFuzzer.cmake - one bounded libFuzzer run or a replay -------------===#
#
# Run by the fuzz tests of tests/fuzz/CMakeLists.txt with `cmake -P`:
#   -DFUZZER=<executable> -DMODE=campaign|replay
#   campaign: -DCORPUS=<seed dir> -DWORK_DIR=<build dir> [-DDICT=<file>]
#             [-DSECONDS=30] [-DTIMEOUT=10] [-DRSS_MB=2048]
#     copies the seeds into WORK_DIR/corpus (the source tree stays as it is),
#     fuzzes that copy for SECONDS, and fails if libFuzzer reports a crash,
#     a timeout or an out-of-memory input (saved in WORK_DIR/artifacts/).
#   replay: -DREGRESSIONS=<dir> -DCORPUS=<dir>
#     runs the target once on every file of both folders and fails if one
#     of them fails.
#
#===----------------------------------------------------------------------===#
if(MODE STREQUAL "campaign")
  foreach(default SECONDS=30 TIMEOUT=10 RSS_MB=2048)
    string(REPLACE "=" ";" pair "${default}")
    list(GET pair 0 name)
    list(GET pair 1 value)
    if(NOT DEFINED ${name})
      set(${name} ${value})
    endif()
  endforeach()
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}/artifacts")
  file(COPY "${CORPUS}/" DESTINATION "${WORK_DIR}/corpus")
  set(dict_option "")
  if(DICT)
    set(dict_option "-dict=${DICT}")
  endif()
  execute_process(
    COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=${TIMEOUT}
            -rss_limit_mb=${RSS_MB} -print_final_stats=1 ${dict_option}
            "-artifact_prefix=${WORK_DIR}/artifacts/" "${WORK_DIR}/corpus"
    RESULT_VARIABLE result)
elseif(MODE STREQUAL "replay")
  execute_process(COMMAND "${FUZZER}" -runs=0 "${REGRESSIONS}" "${CORPUS}"
                  RESULT_VARIABLE result)
else()
  message(FATAL_ERROR "RunFuzzer.cmake: MODE must be campaign or replay")
endif()
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${result})")
endif()
