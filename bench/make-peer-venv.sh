#!/usr/bin/env bash
#===- bench/make-peer-venv.sh - the PyTorch peers' venv for attnc-bench ---===#
#
# Makes bench/.venv, a virtual environment for benchmarking only (never a
# dependency of attnc): torch 2.x and flash-pytorch 0.1.9 (lucidrains'
# FLASH, the most used public implementation) from PyPI. attnc-bench uses
# its interpreter for bench/torch_peer.py when it exists. Idempotent: a
# venv that already imports both is kept.
#
#   bench/make-peer-venv.sh            # then: build/bin/attnc-bench ...
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")"
venv=.venv
python=${PYTHON:-python3}
if [ -x "$venv/bin/python3" ] &&
   "$venv/bin/python3" -c "import torch, flash_pytorch" 2>/dev/null; then
  echo "bench/make-peer-venv.sh: $venv has torch $("$venv/bin/python3" -c 'import torch; print(torch.__version__)') and flash-pytorch"
  exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/python3" -m pip install --quiet --upgrade pip
# torch from PyPI (its Linux wheel brings CUDA libraries too: several GiB).
"$venv/bin/python3" -m pip install --quiet "torch>=2,<3" "flash-pytorch==0.1.9" numpy
"$venv/bin/python3" -c "import torch, flash_pytorch; print('bench/make-peer-venv.sh: torch', torch.__version__, 'and flash-pytorch in bench/.venv')"
