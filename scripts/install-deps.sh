#!/usr/bin/env bash
#===- scripts/install-deps.sh - install attnc's build dependencies -------===#
#
# Installs every dependency of attnc from Debian 12's own packages. Idempotent
# and non-interactive; needs root or sudo. Packages already present are left
# alone, so a second run only checks.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

packages=(
  build-essential cmake ninja-build git python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libhalide14-0-dev
  libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev libmimalloc-dev
  clang-19 libclang-rt-19-dev libfuzzer-19-dev nlohmann-json3-dev libsqlite3-dev
  libopenmpi-dev openmpi-bin
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
  python3-venv
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
