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
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)"
./scripts/test-sanitized.sh
