"""Shared set-up of the attnc Python module's tests (ctest runs them with
the build's package on PYTHONPATH; tests/python/CMakeLists.txt).

ATTNC, ATTNC_REFERENCE and ATTNC_EXAMPLES name the CLI, the fp64 reference
tool (tests/reference/ReferenceMain.cpp) and examples/."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

# One safetensors writer: the FLASH-pytorch converter's (numpy only).
sys.path.insert(0, str(pathlib.Path(__file__).parents[2]
                       / "tools" / "convert-flash-pytorch"))
from convert_flash_pytorch import write_safetensors  # noqa: E402,F401

EXAMPLES = pathlib.Path(os.environ.get(
    "ATTNC_EXAMPLES", pathlib.Path(__file__).parents[2] / "examples"))
THREADS = 2


def tool(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail(f"${name} is not set: run these tests through ctest")
    return path


def random_weights(model, seed):
    """Weights of the model's shapes: gains near 1, matrices N(0, 1/in),
    everything else 0.1 N(0, 1)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, spec in model.weights.items():
        shape = spec.shape
        if name.endswith("norm.weight") or name.endswith("gamma"):
            w = 1 + 0.1 * rng.standard_normal(shape)
        elif len(shape) >= 2:
            w = rng.standard_normal(shape) / np.sqrt(shape[-2])
        else:
            w = 0.1 * rng.standard_normal(shape)
        out[name] = w.astype(np.float32)
    return out


def run_cli(*args):
    """Runs a tool; returns its stdout, failing the test with its stderr."""
    done = subprocess.run(list(args), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def reference(path, weights_file, inputs, tmp_path, model=None, output="y"):
    """The fp64 reference's `output` (rounded to float32) of the model at
    `path` on `inputs` (name -> array) with the weights in `weights_file`."""
    args = [tool("ATTNC_REFERENCE"), str(path), "--weights", str(weights_file)]
    if model:
        args += ["--model", model]
    for name, array in inputs.items():
        np.save(tmp_path / f"in_{name}.npy", array)
        args += ["--input", f"{name}={tmp_path / f'in_{name}.npy'}"]
    args += ["--output", f"{output}={tmp_path / 'ref_y.npy'}"]
    run_cli(*args)
    return np.load(tmp_path / "ref_y.npy")


def relative_error(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want)) /
                 np.max(np.abs(want)))
