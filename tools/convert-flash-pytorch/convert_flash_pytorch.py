#!/usr/bin/env python3
"""Converts a FLASH-pytorch checkpoint into an .attn model and its weights.

FLASH-pytorch (PyPI `flash-pytorch` 0.1.9, lucidrains) is the most used
public FLASH implementation. This reads the state_dict of one of its `FLASH`
or `GAU` layers (a file written by `torch.save(module.state_dict(), ...)`,
or of the module itself) and writes

  OUT.attn         the layer as attnc's `flash` or `gau` template, with the
                   options that give FLASH-pytorch's mathematics
                   (docs/dsl.md §5.1-5.2, ../shared/spec/flash-pytorch.md);
  OUT.safetensors  its weights under docs/dsl.md's names.

    tools/convert-flash-pytorch/convert_flash_pytorch.py flash.pt \\
        --causal --group-size 256 --shift-tokens -o out/flash_layer
    attnc run out/flash_layer.attn --weights out/flash_layer.safetensors \\
        --input x=x.npy --output y=y.npy

A state_dict holds the weights but not every constructor argument: the
sizes (d, e, s), the norm (LayerNorm or ScaleNorm), the T5 table and the
rotary width are read from it; `causal`, `group_size` and `shift_tokens`
must be given as options, as they were given to FLASH-pytorch. What attnc
cannot express yet is refused with a message, never converted wrongly:
rotary embeddings other than `RotaryEmbedding(dim)` with theta 10000, and
absolute positions other than ScaledSinuEmbedding's default frequencies.
A `FLASHTransformer` converts whole: token ids in, logits out.
Two constructor arguments leave no trace in a state_dict and are not
supported: `laplace_attn_fn = True` and `reduce_group_non_causal_attn =
False`; a layer built with either converts to the default mathematics.

It needs torch (to read the file) and numpy; attnc itself needs neither.
"""
import argparse
import json
import pathlib
import re
import sys

import numpy as np


class ConversionError(Exception):
    """A checkpoint that attnc cannot express: the message says why."""


def load_state_dict(path):
    """The state_dict saved at `path` (a state_dict or a module)."""
    try:
        import torch
    except ImportError as error:
        raise ConversionError(
            "reading a torch.save file needs torch (pip install torch)"
        ) from error
    try:
        obj = torch.load(path, map_location="cpu")
    except Exception as error:  # torch raises many kinds
        raise ConversionError(f"cannot read {path}: {error}") from error
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise ConversionError(
            f"{path} holds a {type(obj).__name__}, not a state_dict")
    return {name: value.detach().cpu().double().numpy()
            for name, value in obj.items()}


def detect_kind(weights):
    """'transformer', 'flash', 'gau' or a ConversionError naming what the
    keys look like."""
    names = set(weights)
    if "token_emb.weight" in names:
        return "transformer"
    if "qk_offset_scale.gamma" in names:
        return "flash"
    if "offsetscale.gamma" in names:
        return "gau"
    raise ConversionError(
        "not a FLASH-pytorch FLASH or GAU state_dict (no "
        "qk_offset_scale.gamma or offsetscale.gamma; keys: "
        + ", ".join(sorted(names)[:8]) + ", ...)")


def take(weights, name, shape=None):
    """weights[name], checked against `shape`."""
    if name not in weights:
        raise ConversionError(f"the state_dict has no '{name}'")
    value = weights[name]
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise ConversionError(f"'{name}' has shape {list(value.shape)}, "
                              f"expected {list(shape)}")
    return value


def rotary_dims(weights, s):
    """The rotary width r from `rotary_pos_emb.freqs`, checked to be
    RotaryEmbedding(r)'s 10000^(-2i/r); 0 without rotary embeddings."""
    if "rotary_pos_emb.freqs" not in weights:
        return 0
    freqs = weights["rotary_pos_emb.freqs"]
    r = 2 * freqs.shape[0]
    expected = 1.0 / 10000.0 ** (np.arange(0, r, 2) / r)
    if freqs.ndim != 1 or not np.allclose(freqs, expected, rtol=1e-5):
        raise ConversionError(
            "rotary_pos_emb.freqs are not RotaryEmbedding(dim)'s default "
            "frequencies 10000^(-2i/dim): only those are supported")
    if r > s:
        raise ConversionError(f"the rotary width {r} exceeds "
                              f"query_key_dim {s}")
    return r


def layer_call(weights, args, layer, input_name, kind=None):
    """(template call, {attnc weight name: array}, d) of the FLASH or GAU
    layer whose keys `weights` holds, its weights named `layer.<part>`."""
    kind = kind or detect_kind(weights)
    heads = 4 if kind == "flash" else 2
    offset_scale = "qk_offset_scale" if kind == "flash" else "offsetscale"
    gamma = take(weights, f"{offset_scale}.gamma")
    s = gamma.shape[1]
    w_qk = take(weights, "to_qk.0.weight")
    d = w_qk.shape[1]
    w_hidden = take(weights, "to_hidden.0.weight")
    e = w_hidden.shape[0] // 2
    take(weights, "to_hidden.0.weight", (2 * e, d))
    take(weights, "to_qk.0.weight", (s, d))
    take(weights, f"{offset_scale}.gamma", (heads, s))
    out_prefix = "to_out" if kind == "flash" else "to_out.0"
    out = {}

    # The norm: LayerNorm (weight, bias) or ScaleNorm (g).
    options = []
    if "norm.g" in weights:
        out[f"{layer}.norm.weight"] = take(weights, "norm.g", (1,))
        options += ["norm = scale_norm", "norm_clamp = true"]
    else:
        out[f"{layer}.norm.weight"] = take(weights, "norm.weight", (d,))
        out[f"{layer}.norm.bias"] = take(weights, "norm.bias", (d,))

    # to_hidden gives v then the gate; attnc's uvz columns are u (the
    # gate), v, z (to_qk): nn.Linear stores [out, in], attnc [in, out].
    b_hidden = take(weights, "to_hidden.0.bias", (2 * e,))
    b_qk = take(weights, "to_qk.0.bias", (s,))
    out[f"{layer}.uvz.weight"] = np.concatenate(
        [w_hidden[e:].T, w_hidden[:e].T, w_qk.T], axis=1)
    out[f"{layer}.uvz.bias"] = np.concatenate(
        [b_hidden[e:], b_hidden[:e], b_qk])

    # OffsetScale rows: FLASH-pytorch's quad_q, lin_q, quad_k, lin_k are
    # attnc's rows 0, 2, 1, 3 (quad_q, quad_k, lin_q, lin_k); GAU's q, k.
    order = [0, 2, 1, 3] if kind == "flash" else [0, 1]
    beta = take(weights, f"{offset_scale}.beta", (heads, s))
    out[f"{layer}.gamma"] = gamma[order]
    out[f"{layer}.beta"] = beta[order]

    table = take(weights, "rel_pos_bias.relative_attention_bias.weight")
    if table.ndim != 2 or table.shape[1] != 1:
        raise ConversionError("rel_pos_bias.relative_attention_bias.weight "
                              f"has shape {list(table.shape)}, expected "
                              "[num_buckets, 1]")
    buckets = table.shape[0]
    out[f"{layer}.rel_pos"] = table[:, 0]
    options += ["rel_pos = t5", f"num_buckets = {buckets}",
                f"max_distance = {args.max_distance}"]

    w_out = take(weights, f"{out_prefix}.weight", (d, e))
    out[f"{layer}.out.weight"] = w_out.T
    out[f"{layer}.out.bias"] = take(weights, f"{out_prefix}.bias", (d,))

    if kind == "flash":
        r = rotary_dims(weights, s)
        if r:
            options += [f"rope_dims = {r}", "rope_mode = interleaved"]
        else:
            options.append("rope = false")
        if args.shift_tokens:
            options.append("shift_tokens = true")
        if not args.causal:
            options.append("lin_scale = length")
        call = (f"flash({input_name}, e = {e}, s = {s}, "
                f"chunk = {args.group_size}, "
                f"causal = {str(args.causal).lower()}, " + ", ".join(options)
                + ")")
    else:
        if args.shift_tokens:
            raise ConversionError("FLASH-pytorch's GAU has no token shift")
        options.append("rope = false")  # its GAU has no rotary embedding
        call = (f"gau({input_name}, e = {e}, s = {s}, "
                f"causal = {str(args.causal).lower()}, " + ", ".join(options)
                + ")")
    return call, out, d


def header(args, what):
    return (f"# FLASH-pytorch {what}, converted by "
            "tools/convert-flash-pytorch/convert_flash_pytorch.py\n"
            f"# from {args.checkpoint}\n")


def convert_layer(weights, args):
    """(model text, weights) for one FLASH or GAU layer: x -> y."""
    kind = detect_kind(weights)
    call, out, d = layer_call(weights, args, args.layer_name, "x", kind)
    text = (header(args, f"{kind.upper()} layer")
            + f"model {args.model_name} {{\n"
            f"  dim d = {d}\n"
            "  dim n : seq\n"
            "  dim b : batch\n"
            "  input x : f32[b, n, d]\n"
            f"  output y = {call} as {args.layer_name}\n"
            "}\n")
    return text, out


def convert_transformer(weights, args):
    """(model text, weights) for a FLASHTransformer: token ids -> logits
    (token embedding, scaled sinusoidal positions, the layers, the output
    head)."""
    depth = 0
    while any(name.startswith(f"layers.{depth}.") for name in weights):
        depth += 1
    if depth == 0:
        raise ConversionError("a FLASHTransformer without layers.0.*")
    calls, out = set(), {}
    for k in range(depth):
        prefix = f"layers.{k}."
        layer = {name[len(prefix):]: value for name, value in weights.items()
                 if name.startswith(prefix)}
        call, parts, d = layer_call(layer, args, f"layers.{k}", "x", "flash")
        calls.add(call)
        out.update(parts)
    if len(calls) != 1:
        raise ConversionError("the layers of this FLASHTransformer differ "
                              "in configuration; attnc's repeat needs one")
    vocab = take(weights, "to_logits.1.weight").shape[0]
    out["token_emb"] = take(weights, "token_emb.weight", (vocab, d))
    out["abs_pos_scale"] = take(weights, "abs_pos_emb.scale", (1,))
    inv_freq = take(weights, "abs_pos_emb.inv_freq", (d // 2,))
    expected = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
    if d % 2 or not np.allclose(inv_freq, expected, rtol=1e-5):
        raise ConversionError("abs_pos_emb.inv_freq is not "
                              "ScaledSinuEmbedding's 10000^(-2i/dim)")
    out["to_logits_norm_weight"] = take(weights, "to_logits.0.weight", (d,))
    out["to_logits_norm_bias"] = take(weights, "to_logits.0.bias", (d,))
    out["to_logits_weight"] = take(weights, "to_logits.1.weight",
                                   (vocab, d)).T
    out["to_logits_bias"] = take(weights, "to_logits.1.bias", (vocab,))
    text = (header(args, f"FLASHTransformer ({depth} layers)")
            + f"model {args.model_name} {{\n"
            f"  dim d = {d}\n"
            f"  dim vocab = {vocab}\n"
            "  dim n : seq\n"
            "  dim b : batch\n"
            "  input ids : i32[b, n]\n"
            "  param token_emb : f32[vocab, d]\n"
            "  param abs_pos_scale : f32[1]\n"
            "  param to_logits_norm_weight : f32[d]\n"
            "  param to_logits_norm_bias : f32[d]\n"
            "  param to_logits_weight : f32[d, vocab]\n"
            "  param to_logits_bias : f32[vocab]\n"
            "  e = embedding(ids, token_emb)\n"
            "  x = e + sinusoidal(e) * abs_pos_scale\n"
            f"  h = repeat {depth} {calls.pop()} as layers\n"
            "  output logits = layer_norm(h, to_logits_norm_weight, "
            "to_logits_norm_bias) @ to_logits_weight + to_logits_bias\n"
            "}\n")
    return text, out


def convert(weights, args):
    """(model text, {attnc weight name: array})."""
    if detect_kind(weights) == "transformer":
        return convert_transformer(weights, args)
    return convert_layer(weights, args)


def write_safetensors(path, tensors):
    """A safetensors file of float32 arrays (name -> array), names sorted."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Convert a FLASH-pytorch FLASH or GAU state_dict into an "
                    ".attn model and a safetensors file of its weights.")
    parser.add_argument("checkpoint", help="torch.save file (state_dict)")
    parser.add_argument("-o", "--output", required=True,
                        help="output path without extension: writes "
                             "OUTPUT.attn and OUTPUT.safetensors")
    parser.add_argument("--causal", action="store_true",
                        help="the layer was built with causal = True")
    parser.add_argument("--group-size", type=int, default=256,
                        help="FLASH's group_size (default 256)")
    parser.add_argument("--shift-tokens", action="store_true",
                        help="FLASH was built with shift_tokens = True")
    parser.add_argument("--max-distance", type=int, default=128,
                        help="the T5 bias's max_distance (FLASH-pytorch: "
                             "128)")
    parser.add_argument("--prefix", default="",
                        help="read the keys under this prefix, e.g. "
                             "'layers.0.' of a FLASHTransformer")
    parser.add_argument("--layer-name", default="layer",
                        help="attnc layer name: weights are "
                             "LAYER_NAME.<part> (default 'layer')")
    parser.add_argument("--model-name", default=None,
                        help="the .attn model's name (default: the "
                             "output's file name)")
    args = parser.parse_args(argv)
    if args.group_size < 1:
        parser.error("--group-size must be >= 1")
    identifier = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
    if args.model_name is None:
        args.model_name = re.sub(r"\W", "_",
                                 pathlib.Path(args.output).name) or "model"
        if args.model_name[0].isdigit():
            args.model_name = "m_" + args.model_name
    for what in ("model_name", "layer_name"):
        if not identifier.match(getattr(args, what)):
            parser.error(f"--{what.replace('_', '-')} must be an identifier")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        weights = load_state_dict(args.checkpoint)
        if args.prefix:
            weights = {name[len(args.prefix):]: value
                       for name, value in weights.items()
                       if name.startswith(args.prefix)}
            if not weights:
                raise ConversionError(f"no keys start with '{args.prefix}'")
        text, tensors = convert(weights, args)
    except ConversionError as error:
        print(f"convert_flash_pytorch: error: {error}", file=sys.stderr)
        return 1
    model = pathlib.Path(args.output + ".attn")
    weights_file = pathlib.Path(args.output + ".safetensors")
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_text(text)
    write_safetensors(weights_file, tensors)
    print(f"convert_flash_pytorch: wrote {model} and {weights_file} "
          f"({len(tensors)} weights)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
