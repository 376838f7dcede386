"""attnc.compile (the AOT library) and attnc.emit (the stages) from Python,
and the model's description."""
import re
import sys

import numpy as np
import pytest

import attnc
from conftest import EXAMPLES, THREADS, run_cli, tool


def test_compile_writes_the_library_and_header(tmp_path):
    written = attnc.compile(EXAMPLES / "gau.attn", tmp_path / "out",
                            name="my_gau")
    names = sorted(p.rsplit("/", 1)[-1] for p in written)
    assert "libmy_gau.a" in names and "my_gau.h" in names
    header = (tmp_path / "out" / "my_gau.h").read_text()
    assert "my_gau_run" in header or "my_gau" in header


def test_compile_with_decode_adds_the_state_api_or_names_the_op(tmp_path):
    model = tmp_path / "lm.attn"
    model.write_text(
        "model lm {\n  dim n : seq\n  dim b : batch\n"
        "  input ids : i32[b, n]\n  param tok : f32[20, 32]\n"
        "  output h = flash(embedding(ids, tok), e = 64, s = 16, "
        "chunk = 8, causal = true)\n}\n")
    attnc.compile(model, tmp_path / "lm", decode=True)
    header = (tmp_path / "lm" / "lm.h").read_text()
    for entry in ("lm_state_new", "lm_prefill", "lm_step", "lm_state_free"):
        assert f"static inline attn_status {entry}(" in header or \
            f"static inline void {entry}(" in header, entry
    assert "const attn_ids *ids" in header
    with pytest.raises(attnc.CompileError,
                       match=r"flash_bidir.attn:\d+:\d+: error: decoding "
                             r"cannot run model 'flash_bidir' block by block"):
        attnc.compile(EXAMPLES / "flash_bidir.attn", tmp_path / "bidir",
                      decode=True)
    # GAU keeps a key/value cache: its state takes a capacity.
    attnc.compile(EXAMPLES / "gau.attn", tmp_path / "gau", decode=True)
    header = (tmp_path / "gau" / "gau_layer.h").read_text()
    assert "gau_layer_state_new(const gau_layer_weights *w, int64_t " \
           "capacity, gau_layer_state **out)" in header


def test_compile_rejects_a_name_that_is_not_a_c_identifier(tmp_path):
    with pytest.raises(attnc.InputError, match="not a C identifier"):
        attnc.compile(EXAMPLES / "gau.attn", tmp_path, name="my-gau")


@pytest.mark.parametrize("stage", ["ast", "attn", "attn-primitives",
                                   "attn-scheduled", "halide-stmt"])
def test_emit_returns_what_the_cli_prints(stage):
    path = str(EXAMPLES / "gau.attn")
    if stage == "halide-stmt":
        # In a process of its own, as the CLI's: Halide makes its names
        # unique per process (`t12$3` after other pipelines were lowered).
        text = run_cli(sys.executable, "-c", "import attnc, sys; sys.stdout."
                       f"write(attnc.emit({path!r}, 'halide-stmt'))")
    else:
        text = attnc.emit(path, stage)
    assert text == run_cli(tool("ATTNC"), path, f"--emit={stage}")
    assert len(text) > 200


def test_the_model_describes_its_tensors():
    m = attnc.load(EXAMPLES / "gau.attn", random_weights=1, threads=THREADS)
    assert list(m.inputs) == ["x"] and list(m.outputs) == ["y"]
    assert m.inputs["x"].shape == ("b", "n", 512)
    assert m.inputs["x"].dtype == "float32"
    assert all(all(isinstance(d, int) for d in w.shape)
               for w in m.weights.values())
    assert re.match(r"\d+\.\d+\.\d+", attnc.__version__)
    assert set(m.compile_times) >= {"mlir_ms", "llvm_ms", "cache_hits"}


def test_a_tuning_database_gives_its_schedules_to_load_and_compile(tmp_path):
    db = tool("ATTNC_TUNED_DB")  # tiny-gau.attn tuned at n = 64 and 1024
    path = EXAMPLES.parent / "tests" / "e2e" / "Inputs" / "tiny-gau.attn"
    with pytest.warns(UserWarning, match="1 of 5 scheduled ops take a tuned "
                                         "schedule"):
        tuned = attnc.load(path, tuning_db=db, tuning_dims={"n": 64, "b": 1},
                           random_weights=1, threads=THREADS)
    plain = attnc.load(path, random_weights=1, threads=THREADS)
    x = np.random.default_rng(0).standard_normal((1, 64, 32), np.float32)
    want = plain(x)
    assert np.max(np.abs(tuned(x) - want)) <= 1e-5 * np.max(np.abs(want))
    attnc.compile(path, tmp_path, tuning_db=db, name="tuned_tiny")
    header = (tmp_path / "tuned_tiny.h").read_text()
    assert "tuned schedules from tuning database" in header
