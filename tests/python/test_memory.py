"""Zero copy: the kernel reads the caller's arrays and tensors where they
are and writes outputs that are returned as they are."""
import threading
import time

import numpy as np
import pytest

import attnc
from conftest import EXAMPLES, THREADS


@pytest.fixture(scope="module")
def gau():
    return attnc.load(EXAMPLES / "gau.attn", random_weights=1, threads=THREADS)


def test_the_kernel_reads_the_input_array_and_writes_the_returned_one(gau):
    x = np.random.default_rng(0).standard_normal((1, 64, 512), np.float32)
    y = gau(x)
    assert gau.last_buffers["x"] == x.ctypes.data
    assert gau.last_buffers["y"] == y.ctypes.data
    assert y.flags.owndata and y.flags.c_contiguous


def test_outputs_go_into_the_arrays_given_as_out(gau):
    x = np.random.default_rng(0).standard_normal((1, 64, 512), np.float32)
    out = np.full((1, 64, 512), np.nan, np.float32)
    y = gau.run({"x": x}, out={"y": out})["y"]
    assert y is out
    assert np.array_equal(out, gau(x))


def test_torch_tensors_are_read_and_returned_without_copies(gau):
    torch = pytest.importorskip("torch")
    x = torch.randn(1, 64, 512)
    y = gau(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    assert gau.last_buffers["x"] == x.data_ptr()
    assert gau.last_buffers["y"] == y.data_ptr()
    x.requires_grad_(True)  # read through a detached view, not copied
    gau(x)
    assert gau.last_buffers["x"] == x.data_ptr()


def test_a_torch_tensor_given_as_out_is_written_and_returned(gau):
    torch = pytest.importorskip("torch")
    x = torch.randn(1, 16, 512)
    out = torch.full((1, 16, 512), float("nan"))
    y = gau.run({"x": x}, out={"y": out})["y"]
    assert y is out
    assert gau.last_buffers["y"] == out.data_ptr()
    assert torch.equal(out, gau(x))


def test_the_gil_is_released_while_a_kernel_runs():
    m = attnc.load(EXAMPLES / "flash.attn", random_weights=1, threads=1)
    x = np.random.default_rng(0).standard_normal((1, 4096, 512), np.float32)
    m(x)  # compiled and warm
    start = time.perf_counter()
    m(x)
    one_run = time.perf_counter() - start
    ticks, done = [], threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.01)
    start = time.perf_counter()
    m(x)
    end = time.perf_counter()
    done.set()
    counter.join()
    during = [t for t in ticks if start < t < end]
    # A thread that sleeps 1 ms per tick makes dozens of ticks while the
    # kernel runs (tens of ms) unless the call holds the GIL.
    assert one_run > 0.02, "the run is too short to tell"
    assert len(during) >= max(5, 0.2 * (end - start) / 0.001)
