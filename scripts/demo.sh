#!/usr/bin/env bash
#===- scripts/demo.sh - install, build and run attnc on an example --------===#
#
# The README's run command: installs the Debian dependencies, builds attnc
# in build/, then compiles examples/flash.attn (or the .attn file given as
# the first argument) through the JIT and runs it on generated input
# (n = 1024, batch 1) with deterministic random weights, printing the
# output's shape, a checksum and the time taken.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# The compilers of scripts/test.sh: the same build/ serves both commands
# (another compiler would make CMake discard it and build everything anew).
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
cmake --build build --target attnc
./build/bin/attnc run "${1:-examples/flash.attn}" \
  --random-weights 1 --random-inputs 1 --dim n=1024 --dim b=1
