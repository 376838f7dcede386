#===- OutOfTreeApp.cmake - install attnc, build an app against it --------===#
#
# cmake -DBUILD_DIR=... -DSTAGE=... -DAPP_SOURCE=... -DAPP_BUILD=...
#       -DMODEL=... -DGENERATOR=... -DLIBDIR=... [-DPYTHON=... -DPYTHON_DIR=...]
#       -P OutOfTreeApp.cmake
#
# 1. `cmake --install BUILD_DIR --prefix STAGE` into an empty prefix;
# 2. the installed attnc runs (--version; random weights saved for MODEL);
# 3. APP_SOURCE (a project of its own: find_package(attnc CONFIG),
#    attnc_add_model) is configured with CMAKE_PREFIX_PATH=STAGE only, built,
#    and run on those weights; its output line is what the test matches;
# 4. with PYTHON: the installed Python package (STAGE/PYTHON_DIR) is
#    imported from there, not from the build, and runs MODEL on the weights.
# Each step that fails stops the script with its output.
#
#===----------------------------------------------------------------------===#
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${STAGE}" "${APP_BUILD}")
file(MAKE_DIRECTORY "${APP_BUILD}")
step("installing attnc" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${STAGE}")
foreach(file bin/attnc bin/attn-opt bin/attnc-convert-flash-pytorch
        include/attnc/attn_runtime.h
        include/attnc/attn_runtime.hpp ${LIBDIR}/cmake/attnc/attncConfig.cmake
        ${LIBDIR}/cmake/attnc/attncConfigVersion.cmake
        ${LIBDIR}/cmake/attnc/AttncAddModel.cmake)
  if(NOT EXISTS "${STAGE}/${file}")
    message(FATAL_ERROR "the install lacks ${file}")
  endif()
endforeach()

step("the installed attnc --version" "${STAGE}/bin/attnc" --version)
message(STATUS "installed: ${step_output}")
step("saving weights with the installed attnc" "${STAGE}/bin/attnc" run
     "${MODEL}" --random-weights 5 --random-inputs 1 --dim n=4 --dim b=1
     --save-weights "${APP_BUILD}/weights.safetensors")

step("configuring the app" ${CMAKE_COMMAND} -S "${APP_SOURCE}" -B "${APP_BUILD}"
     -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
     "-DCMAKE_PREFIX_PATH=${STAGE}" "-DATTNC_EXAMPLE_MODEL=${MODEL}")
step("building the app" ${CMAKE_COMMAND} --build "${APP_BUILD}")
step("running the app" "${APP_BUILD}/gau_app" "${APP_BUILD}/weights.safetensors" 77 2)
message("${step_output}")

if(PYTHON)
  step("the installed Python package" ${CMAKE_COMMAND} -E env
       "PYTHONPATH=${STAGE}/${PYTHON_DIR}" "${PYTHON}" -c "
import attnc, numpy
assert attnc.__file__.startswith('${STAGE}/'), attnc.__file__
m = attnc.load('${MODEL}', weights='${APP_BUILD}/weights.safetensors', threads=2)
y = m(numpy.ones((1, 8, 512), numpy.float32))
assert y.shape == (1, 8, 512) and numpy.isfinite(y).all()
print('python: attnc', attnc.__version__, 'from', attnc.__file__)
")
  message("${step_output}")
endif()
