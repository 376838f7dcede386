#!/usr/bin/env bash
#===- scripts/demo.sh - install, build and run attnc on an example --------===#
#
# The README's run command: installs the Debian dependencies, builds attnc
# in build/ and prints the attn IR of examples/flash.attn (or of the .attn
# file given as the first argument).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --target attnc
./build/bin/attnc "${1:-examples/flash.attn}" --emit=attn
