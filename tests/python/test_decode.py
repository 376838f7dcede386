"""Incremental decoding from Python (attnc.load(..., decode=True),
m.decoder()): a prompt then steps give the whole-sequence run's logits at
those positions; the state does not grow; errors name what is wrong."""
import pathlib

import numpy as np
import pytest

import attnc
from conftest import THREADS

TOKEN_LM = pathlib.Path(__file__).parents[1] / "e2e/Inputs/token-lm.attn"
MHSA_LM = pathlib.Path(__file__).parents[1] / "e2e/Inputs/mhsa-lm.attn"


def test_prompt_then_steps_equal_the_whole_run():
    whole = attnc.load(TOKEN_LM, random_weights=4, threads=THREADS)
    m = attnc.load(TOKEN_LM, random_weights=4, threads=THREADS, decode=True)
    ids = np.random.default_rng(2).integers(0, 50, (1, 45)).astype(np.int32)
    want = whole(ids)
    d = m.decoder()
    assert d.block_rows == 16 and d.length == 0
    got = [d.append(ids[:, :20])]
    state = d.state_bytes
    for t in range(20, 45):
        got.append(d.append(ids[:, t:t + 1]))
        assert d.length == t + 1 and d.state_bytes == state
    got = np.concatenate(got, axis=1)
    assert got.shape == (1, 45, 50) and got.dtype == np.float32
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    d.reset()
    assert d.length == 0
    assert np.array_equal(d.append(ids=ids[:, :20]), got[:, :20])


def test_decoder_errors():
    m = attnc.load(TOKEN_LM, random_weights=4, threads=THREADS, decode=True)
    d = m.decoder()
    with pytest.raises(attnc.InputError, match=r"token id 50 at \[0, 1\] of "
                                               r"input 'ids' is out of range"):
        d.append(np.array([[3, 50]], np.int32))
    assert d.length == 0
    with pytest.raises(attnc.InputError, match=r"batch dims 1"):
        d.append(np.zeros((2, 3), np.int32))
    whole = attnc.load(TOKEN_LM, random_weights=4, threads=THREADS)
    with pytest.raises(attnc.Error, match=r"was not compiled to stream"):
        whole.decoder()
    bidir = pathlib.Path(__file__).parents[2] / "examples/flash_bidir.attn"
    with pytest.raises(attnc.CompileError,
                       match=r"decoding cannot run model 'flash_bidir'"):
        attnc.load(bidir, random_weights=1, decode=True)


def test_attention_over_the_whole_sequence_decodes_with_a_cache():
    whole = attnc.load(MHSA_LM, random_weights=4, threads=THREADS)
    m = attnc.load(MHSA_LM, random_weights=4, threads=THREADS, decode=True)
    with pytest.raises(attnc.InputError, match=r"key/value cache, whose "
                                               r"capacity"):
        m.decoder()
    ids = np.random.default_rng(3).integers(0, 50, (1, 70)).astype(np.int32)
    want = whole(ids)
    d = m.decoder(capacity=70)
    got = [d.append(ids[:, :60])] + [d.append(ids[:, t:t + 1])
                                      for t in range(60, 70)]
    got = np.concatenate(got, axis=1)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    with pytest.raises(attnc.InputError, match=r"the key/value cache holds "
                                               r"70 rows"):
        d.append(ids[:, :1])
    assert d.length == 70
