"""The module's numerics: against the fp64 reference, and bit for bit
against `attnc run` on the same weights, inputs and threads."""
import gc
import pathlib
import sys

import numpy as np
import pytest

import attnc
from conftest import (EXAMPLES, THREADS, random_weights, reference,
                      relative_error, run_cli, tool, write_safetensors)


@pytest.mark.parametrize("example,b,n", [("gau.attn", 2, 100),
                                         ("flash.attn", 1, 300),
                                         ("flash_bidir.attn", 1, 300)])
def test_matches_the_fp64_reference(example, b, n, tmp_path):
    m = attnc.load(EXAMPLES / example, random_weights=1, threads=THREADS)
    weights = random_weights(m, seed=7)
    write_safetensors(tmp_path / "w.safetensors", weights)
    m = attnc.load(EXAMPLES / example, weights=weights, threads=THREADS)
    x = np.random.default_rng(3).standard_normal((b, n, 512), np.float32)
    y = m(x)
    assert y.shape == (b, n, 512) and y.dtype == np.float32
    want = reference(EXAMPLES / example, tmp_path / "w.safetensors", {"x": x},
                     tmp_path)
    assert relative_error(y, want) < 1e-4


def test_weights_from_a_safetensors_file_equal_the_same_arrays(tmp_path):
    m = attnc.load(EXAMPLES / "gau.attn", random_weights=1, threads=THREADS)
    weights = random_weights(m, seed=5)
    write_safetensors(tmp_path / "w.safetensors", weights)
    from_file = attnc.load(EXAMPLES / "gau.attn",
                           weights=tmp_path / "w.safetensors", threads=THREADS)
    from_dict = attnc.load(EXAMPLES / "gau.attn", weights=weights,
                           threads=THREADS)
    x = np.random.default_rng(1).standard_normal((1, 64, 512), np.float32)
    assert np.array_equal(from_file(x), from_dict(x))


def cli_output(example, weights_file, x, tmp_path):
    np.save(tmp_path / "x.npy", x)
    run_cli(tool("ATTNC"), "run", str(EXAMPLES / example), "--weights",
            str(weights_file), "--input", f"x={tmp_path / 'x.npy'}",
            "--output", f"y={tmp_path / 'y.npy'}", "--threads", str(THREADS))
    return np.load(tmp_path / "y.npy")


def test_numpy_and_torch_match_attnc_run_bit_for_bit(tmp_path):
    torch = pytest.importorskip("torch")
    m = attnc.load(EXAMPLES / "flash.attn", random_weights=1, threads=THREADS)
    write_safetensors(tmp_path / "w.safetensors", random_weights(m, seed=2))
    m = attnc.load(EXAMPLES / "flash.attn", weights=tmp_path / "w.safetensors",
                   threads=THREADS)
    x = np.random.default_rng(4).standard_normal((1, 600, 512), np.float32)
    want = cli_output("flash.attn", tmp_path / "w.safetensors", x, tmp_path)
    assert np.array_equal(m(x), want)
    y = m(torch.from_numpy(x))
    assert isinstance(y, torch.Tensor)
    assert np.array_equal(y.numpy(), want)


def test_keyword_positional_and_dict_calls_agree():
    m = attnc.load(EXAMPLES / "gau.attn", random_weights=3, threads=THREADS)
    x = np.random.default_rng(2).standard_normal((1, 50, 512), np.float32)
    by_position = m(x)
    assert np.array_equal(m(x=x), by_position)
    assert np.array_equal(m.run({"x": x})["y"], by_position)


def test_a_non_contiguous_array_is_copied_and_computes_the_same():
    m = attnc.load(EXAMPLES / "gau.attn", random_weights=3, threads=THREADS)
    wide = np.random.default_rng(2).standard_normal((1, 50, 1024), np.float32)
    x = wide[:, :, ::2]
    assert not x.flags.c_contiguous
    y = m(x)
    assert m.last_buffers["x"] != x.ctypes.data
    assert np.array_equal(y, m(np.ascontiguousarray(x)))


@pytest.mark.parametrize("example,tolerance", [("flash.attn", 1e-6),
                                               ("flash_bidir.attn", 1e-5)])
def test_streamed_flash_equals_the_whole_sequence_run(example, tolerance):
    # Blocks of 256 rows: three per sequence (the last one partial), two
    # batch entries; the whole-sequence run is checked against the fp64
    # reference above. Non-causal FLASH streams in two sweeps (its chunk
    # states' total first), whose sum's order differs from the whole run's.
    m = attnc.load(EXAMPLES / example, random_weights=1, threads=THREADS)
    weights = random_weights(m, seed=9)
    whole = attnc.load(EXAMPLES / example, weights=weights, threads=THREADS)
    streamed = attnc.load(EXAMPLES / example, weights=weights,
                          threads=THREADS, stream_rows=256)
    x = np.random.default_rng(8).standard_normal((2, 700, 512), np.float32)
    assert relative_error(streamed(x), whole(x)) <= tolerance


def test_token_ids_match_the_fp64_reference_and_are_checked(tmp_path):
    # Token ids in, logits out: embedding, a causal FLASH layer, a head.
    path = pathlib.Path(__file__).parents[1] / "e2e/Inputs/token-lm.attn"
    m = attnc.load(path, random_weights=1, threads=THREADS)
    write_safetensors(tmp_path / "w.safetensors", random_weights(m, seed=3))
    m = attnc.load(path, weights=tmp_path / "w.safetensors", threads=THREADS)
    assert m.inputs["ids"].dtype == "int32"
    ids = np.random.default_rng(5).integers(0, 50, (2, 37)).astype(np.int32)
    y = m(ids)
    assert y.shape == (2, 37, 50) and y.dtype == np.float32
    want = reference(path, tmp_path / "w.safetensors", {"ids": ids}, tmp_path,
                     output="logits")
    assert relative_error(y, want) < 1e-4
    with pytest.raises(attnc.InputError, match=r"token ids, int32"):
        m(ids.astype(np.int64))
    bad = ids.copy()
    bad[1, 7] = 50
    with pytest.raises(attnc.InputError,
                       match=r"token id 50 at \[1, 7\] of input 'ids' is out "
                             r"of range: the embedding table has 50 rows"):
        m(bad)


def test_rope_tables_of_kernels_loaded_one_after_another_are_their_own(
        tmp_path):
    # Halide's runtime finds a memoized RoPE table by the address of its
    # name in the loaded code and an instance number of the compiling
    # process. Two kernels compiled by two processes, loaded one after the
    # other at one address, found the first one's tables (y 6.5 off; attnc
    # tune's checks failed under mpirun). codegen/Norms.cpp tags each table.
    cache = tmp_path / "cache"
    x = np.random.default_rng(0).standard_normal((256, 16), np.float32)
    np.save(tmp_path / "x.npy", x)
    models = {}
    for base in (10000.0, 20000.0):
        path = tmp_path / f"rope{int(base)}.attn"
        path.write_text("model r {\n  dim n : seq\n  input x : f32[n, 16]\n"
                        f"  output y = rope(x, base = {base})\n}}\n")
        # Compiled and run in a process of its own.
        run_cli(sys.executable, "-c",
                "import attnc, numpy as np; m = attnc.load("
                f"{str(path)!r}, cache_dir={str(cache)!r}, threads={THREADS})"
                f"; np.save({str(tmp_path / f'y{int(base)}.npy')!r}, "
                f"m(np.load({str(tmp_path / 'x.npy')!r})))")
        models[base] = path
    # Rotations of the pairs (i, i + 8) by p * base^(-i/8), in fp64.
    p, i = np.arange(256)[:, None], np.arange(8)[None, :]
    x1, x2 = x[:, :8].astype(np.float64), x[:, 8:].astype(np.float64)
    for base, path in models.items():
        alone = np.load(tmp_path / f"y{int(base)}.npy")
        angle = p * base ** (-i / 8.0)
        want = np.concatenate([x1 * np.cos(angle) - x2 * np.sin(angle),
                               x2 * np.cos(angle) + x1 * np.sin(angle)], 1)
        assert np.abs(alone - want).max() < 1e-5, base
        # Loaded from the cache in this process, after the other one was
        # run and unloaded.
        m = attnc.load(path, cache_dir=cache, threads=THREADS)
        assert np.array_equal(m(x), alone), base
        del m
        gc.collect()
