"""Every error path raises an attnc exception with the message the CLI
prints: located diagnostics, and the tensor with both shapes."""
import re

import numpy as np
import pytest

import attnc
from conftest import EXAMPLES, THREADS, random_weights, write_safetensors


@pytest.fixture(scope="module")
def gau():
    return attnc.load(EXAMPLES / "gau.attn", random_weights=1, threads=THREADS)


def test_a_wrong_shape_names_the_input_and_both_shapes(gau):
    with pytest.raises(attnc.InputError,
                       match=re.escape("input 'x' has shape [1, 10, 256] but "
                                       "the model expects [b, n, 512]")):
        gau(np.zeros((1, 10, 256), np.float32))


def test_a_float64_array_is_rejected_naming_the_input_and_dtype(gau):
    with pytest.raises(attnc.InputError,
                       match="input 'x' has dtype float64 but attnc models "
                             "take float32"):
        gau(np.zeros((1, 10, 512)))


def test_input_errors_are_value_errors(gau):
    with pytest.raises(ValueError):
        gau(np.zeros((1, 10, 512)))


def test_something_that_is_not_an_array_is_named(gau):
    with pytest.raises(attnc.InputError,
                       match="input 'x' is a str that is not an array"):
        gau.run({"x": "hello"})
    with pytest.raises(attnc.InputError, match="input 'x' is a str, not a "
                                               "numpy array"):
        gau._model.run({"x": "hello"}, {})  # the C++ half checks as well
    nested = np.zeros((1, 3, 512)).tolist()  # a sequence is read as float32
    assert gau(nested).shape == (1, 3, 512)


def test_a_missing_or_unknown_input_is_named(gau):
    with pytest.raises(attnc.InputError, match="missing input 'x'"):
        gau.run({})
    with pytest.raises(attnc.InputError,
                       match="unknown input 'z'; the model's inputs are x"):
        gau.run({"x": np.zeros((1, 4, 512), np.float32),
                 "z": np.zeros((1,), np.float32)})


def test_an_out_array_of_another_shape_is_rejected(gau):
    x = np.zeros((1, 4, 512), np.float32)
    with pytest.raises(attnc.InputError,
                       match=re.escape("output 'y' has shape [1, 5, 512] but "
                                       "this run writes [1, 4, 512]")):
        gau.run({"x": x}, out={"y": np.zeros((1, 5, 512), np.float32)})
    with pytest.raises(attnc.InputError, match="shares memory with an input"):
        gau.run({"x": x}, out={"y": x})


def test_a_missing_weight_is_named_with_its_shape(gau):
    weights = random_weights(gau, seed=1)
    name = next(iter(weights))
    del weights[name]
    with pytest.raises(attnc.InputError,
                       match=f"missing weight '{re.escape(name)}' with shape"):
        attnc.load(EXAMPLES / "gau.attn", weights=weights)


def test_no_weights_at_all_says_how_to_give_them():
    with pytest.raises(attnc.InputError, match="give weights="):
        attnc.load(EXAMPLES / "gau.attn")


def test_unknown_and_misshapen_weights_are_named(gau, tmp_path):
    weights = random_weights(gau, seed=1)
    with pytest.raises(attnc.InputError, match="no weight 'extra'"):
        attnc.load(EXAMPLES / "gau.attn",
                   weights=dict(weights, extra=np.zeros(3, np.float32)))
    write_safetensors(tmp_path / "w.safetensors",
                      dict(weights, extra=np.zeros(3, np.float32)))
    with pytest.raises(attnc.InputError,
                       match="1 tensor\\(s\\) the model does not use: 'extra'"):
        attnc.load(EXAMPLES / "gau.attn", weights=tmp_path / "w.safetensors")
    name = next(iter(weights))
    bad = dict(weights)
    bad[name] = np.zeros((3,), np.float32)
    with pytest.raises(attnc.InputError,
                       match=f"weight '{re.escape(name)}' has shape \\[3\\]"):
        attnc.load(EXAMPLES / "gau.attn", weights=bad)


def test_a_missing_weights_file_is_an_error(tmp_path):
    with pytest.raises(attnc.Error, match="nothing.safetensors"):
        attnc.load(EXAMPLES / "gau.attn",
                   weights=tmp_path / "nothing.safetensors")


def test_an_unknown_model_name_lists_the_models():
    with pytest.raises(attnc.CompileError,
                       match="no model named 'nope'.*gau_layer"):
        attnc.load(EXAMPLES / "gau.attn", model="nope", random_weights=1)


def test_an_attn_error_carries_file_line_and_column(tmp_path):
    source = tmp_path / "bad.attn"
    source.write_text("model m {\n  dim d = 64\n  input x : f32[d]\n"
                      "  output y : f32[d]\n  y = relu(q)\n}\n")
    with pytest.raises(attnc.CompileError) as raised:
        attnc.load(source)
    message = str(raised.value)
    assert re.search(re.escape(str(source)) + r":5:\d+: error: ", message)
    assert "^" in message  # the caret under the source line, as the CLI


def test_a_model_that_cannot_stream_is_a_located_compile_error():
    with pytest.raises(attnc.CompileError,
                       match=r"gau\.attn:10:7: error: --stream-rows cannot "
                             r"run model 'gau_layer' block by block: "
                             r"'attn\.attention' here"):
        attnc.load(EXAMPLES / "gau.attn", random_weights=1, stream_rows=256)
    with pytest.raises(attnc.InputError, match="stream_rows must be positive"):
        attnc.load(EXAMPLES / "flash.attn", random_weights=1, stream_rows=-1)


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.attn"):
        attnc.load(tmp_path / "missing.attn")
    with pytest.raises(FileNotFoundError, match="missing.attn"):
        attnc.emit(tmp_path / "missing.attn")


def test_an_unknown_schedule_or_stage_is_an_input_error():
    with pytest.raises(attnc.InputError, match="unknown schedule policy 'fastest'"):
        attnc.load(EXAMPLES / "gau.attn", schedule="fastest")
    with pytest.raises(attnc.InputError, match="unknown stage 'llvm'"):
        attnc.emit(EXAMPLES / "gau.attn", "llvm")
