#!/usr/bin/env bash
#===- scripts/test-sanitized.sh - the fast suites under ASan + UBSan -----===#
#
# Configures a second build in build-sanitize/ with
# ATTNC_SANITIZE=address,undefined (attnc's own code instrumented; MLIR,
# LLVM and Halide are not), builds only what the fast suites need, and runs
# them: front end, runtime, schedules, the mutation smoke test, the fuzz
# regressions and the lit suite (attnc and attn-opt under the sanitizers,
# with the CLI's end-to-end tests). The numerics suites (e2e-template-tests,
# differential-tests, reference-tests) run in the Release build only:
# building them twice does not fit CI's 30 minutes on 2 cores. Any
# sanitizer report fails the run (-fno-sanitize-recover=all).
# scripts/test.sh calls it after the Release suites; it expects the
# dependencies to be installed.
#
# ASAN_OPTIONS: allow_user_poisoning=0 because the uninstrumented MLIR
# library reuses pool memory that instrumented code has poisoned, which
# trips a false use-after-poison in MLIR's headers (AttributeSupport.h);
# heap, stack and use-after-free checks stay on. detect_leaks=0 because
# MLIR's and Halide's process-lifetime singletons are never freed.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."

export ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# -O0 compiles fastest (the build is most of this script's time) and keeps
# the reports' stacks exact; the suites it runs are small. clang-19 (its
# sanitizer runtimes come with libclang-rt-19-dev) compiles attnc's
# MLIR-heavy sources at -O0 with the sanitizers in about 0.7 of gcc 12's
# time (tune/Tuner.cpp: 23.3 s against 32.8 s, 2026-12-03). Without MPI: its
# uninstrumented shared-memory transport is not attnc's code to check, and
# the distributed-tuning test runs in the Release suite. Without the Python
# module: an instrumented extension needs the sanitizer runtime preloaded
# into the interpreter; its tests run in the Release suite.
cmake -G Ninja -S . -B build-sanitize -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_CXX_FLAGS="-O0 -g1 -DNDEBUG" -DATTNC_SANITIZE=address,undefined \
  -DATTNC_MPI=OFF -DATTNC_PYTHON=OFF
cmake --build build-sanitize --target \
  attnc attn-opt dsl-syntax-tests dsl-sema-tests runtime-tests \
  schedule-tests session-tests schedule-space-tests tuning-db-tests \
  frontend-fuzz-tests \
  frontend-fuzzer passes-fuzzer schedule-fuzzer safetensors-fuzzer npy-fuzzer

# The suites labelled fast (front end, runtime, schedules, the session, the
# schedule space, the tuning database, the mutation
# smoke test, and lit: the front end's and the dialect's tests and the
# passes; lit's tests/codegen, Halide statement dumps,
# passes/attn-schedule-pipeline.test, 64 runs of attnc, and tests/e2e, the
# CLI's end-to-end runs, are left to the Release build: they compile kernels
# with Halide and LLVM, which are not instrumented, and took 3-5 minutes
# here, which a slow machine's CI run could not afford (36 min for the
# whole script on 2026-12-03). The session's and the runtime's suites
# above cover the driver's code under the sanitizers), then those labelled fuzz (the fuzz targets
# over their seed corpora and crash regressions). The fp64 reference's own
# tests are test code and run in the Release build. The schedule space is
# walked whole for the cuda family (the GPU walker); the CPU walker runs on
# two ops (ScheduleSpaceStagingTest: a dense and a chunk_state on avx2,
# every staging variant) and in ScheduleSpaceStopTest. The whole CPU walks
# (generic, avx2, avx512: the same code with other budgets, hundreds of
# seconds of CPU at -O0 since gemm points have staging variants) run in
# the Release build.
LIT_FILTER_OUT='^attnc :: (codegen/|e2e/|passes/attn-schedule-pipeline)' \
  ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" \
  -L '^(fast|fuzz)$' -E '^Reference|ScheduleSpaceTest\..*_(generic|avx2|avx512)( |$)'
