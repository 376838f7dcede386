#===- compare.cmake - the app's ids against attnc generate's --------------===#
# cmake -DAPP=generate_app -DATTNC=attnc -DMODEL=tiny_lm.attn
#       -DWEIGHTS=w.safetensors -P compare.cmake
# Runs the app and `attnc generate` on the same weights, prompt (20 ids:
# a prefill and steps that cross the chunks of 16) and steps, and fails
# unless both print the same generated ids; then checks that the app
# refuses an id outside the vocabulary with the runtime's message.
set(prompt 3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4)
set(steps 30)
execute_process(COMMAND ${APP} ${WEIGHTS} ${prompt} ${steps}
                OUTPUT_VARIABLE app RESULT_VARIABLE app_status
                ERROR_VARIABLE app_error)
execute_process(COMMAND ${ATTNC} generate ${MODEL} --weights ${WEIGHTS}
                        --prompt-ids ${prompt} --steps ${steps} --threads 2
                OUTPUT_VARIABLE attnc RESULT_VARIABLE attnc_status
                ERROR_VARIABLE attnc_error)
if(NOT app_status EQUAL 0 OR NOT attnc_status EQUAL 0)
  message(FATAL_ERROR "app (${app_status}): ${app}${app_error}\n"
                      "attnc generate (${attnc_status}): ${attnc}${attnc_error}")
endif()
string(REGEX MATCH "generated:[ 0-9]*" app_ids "${app}")
string(REGEX MATCH "generated:[ 0-9]*" attnc_ids "${attnc}")
if(NOT app_ids MATCHES "^generated:( [0-9]+)+$" OR
   NOT app_ids STREQUAL attnc_ids)
  message(FATAL_ERROR "the app generated\n  ${app_ids}\n"
                      "attnc generate\n  ${attnc_ids}")
endif()
string(REGEX MATCH "state [0-9]+ bytes at 49 tokens" state "${app}")
if(NOT state)
  message(FATAL_ERROR "the app's state line is missing: ${app}")
endif()
message(STATUS "the app and attnc generate: ${app_ids}; ${state}")

# Ids outside the vocabulary: in the prefill (its position) and a step.
foreach(case "1,50,2|token id 50 at \\[0, 1\\] of input 'ids'"
             "77|tiny_lm_step: token id 77 of input 'ids'")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 ids)
  list(GET case 1 want)
  execute_process(COMMAND ${APP} ${WEIGHTS} ${ids} 4
                  OUTPUT_VARIABLE bad RESULT_VARIABLE bad_status
                  ERROR_VARIABLE bad_error)
  string(CONCAT want "error: ${want} is out of range: the embedding table "
                "has 50 rows \\(ids 0..49\\)")
  if(bad_status EQUAL 0 OR NOT bad_error MATCHES "${want}")
    message(FATAL_ERROR "ids ${ids}: status ${bad_status}, ${bad_error}")
  endif()
endforeach()
