#!/usr/bin/env bash
#===- scripts/test.sh - install, build and run every attnc test ----------===#
#
# The README's test command and what .ci/run calls: installs the Debian
# dependencies, configures a Release build in build/, builds everything and
# runs `ctest` (GoogleTest suites, the lit suite, the fuzz regressions, the
# fixed batch of generated models against the fp64 reference), then the
# fast suites again under ASan + UBSan (scripts/test-sanitized.sh, a second
# build in build-sanitize/).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# clang-19 (installed by install-deps.sh) compiles attnc's MLIR- and
# Halide-heavy sources in about 0.8 of gcc 12's time at -O3 (tune/Tuner.cpp:
# 24.0 s against 29.7 s, 2026-12-03), which CI's 30 minutes need;
# scripts/demo.sh configures build/ the same way. gcc builds (CMake's
# default compiler here) pass the suites too.
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)"
./scripts/test-sanitized.sh
