"""Models with several inputs and outputs, and calls from several threads."""
import threading

import numpy as np
import pytest

import attnc
from conftest import EXAMPLES, THREADS

TWO = """model two {
  dim n : seq
  dim d = 4
  input a : f32[n, d]
  input b : f32[n, d]
  output s = a + b
  output p = relu(a)
}
"""


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    path = tmp_path_factory.mktemp("two") / "two.attn"
    path.write_text(TWO)
    return attnc.load(path, threads=THREADS)


def test_several_outputs_come_back_in_the_models_order(two):
    a = np.random.default_rng(0).standard_normal((5, 4), np.float32)
    b = np.random.default_rng(1).standard_normal((5, 4), np.float32)
    s, p = two(a, b)
    assert np.array_equal(s, a + b) and np.array_equal(p, np.maximum(a, 0))
    assert list(two.run({"b": b, "a": a})) == ["s", "p"]
    s2, _ = two(a, b=b)
    assert np.array_equal(s2, s)


def test_runtime_dims_must_agree_between_inputs(two):
    with pytest.raises(attnc.InputError,
                       match="runtime dim 'n' is 3 in input 'a' but 4 in "
                             "input 'b'"):
        two(np.ones((3, 4), np.float32), np.ones((4, 4), np.float32))


def test_too_many_or_repeated_arguments_are_input_errors(two):
    x = np.ones((2, 4), np.float32)
    with pytest.raises(attnc.InputError, match="takes 2 input"):
        two(x, x, x)
    with pytest.raises(attnc.InputError, match="input 'a' given twice"):
        two(x, a=x)


def test_a_gpu_target_without_a_gpu_is_a_compile_error():
    with pytest.raises(attnc.CompileError, match="needs a GPU"):
        attnc.load(EXAMPLES / "gau.attn", target="host-cuda", random_weights=1)


def test_calls_from_several_threads_give_the_single_thread_results():
    m = attnc.load(EXAMPLES / "gau.attn", random_weights=1, threads=THREADS)
    xs = [np.random.default_rng(i).standard_normal((1, 96, 512), np.float32)
          for i in range(4)]
    want = [m(x) for x in xs]
    got = [None] * len(xs)

    def call(i):
        for _ in range(3):
            got[i] = m(xs[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
