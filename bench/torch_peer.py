#!/usr/bin/env python3
#===- bench/torch_peer.py - the PyTorch peers of attnc-bench --------------===#
#
# This file holds the PyTorch peers that attnc-bench compares against, fp32,
# batch 1, d = 512, e = 1024, s = 128, C = 256, timed under
# torch.inference_mode() with torch.set_num_threads(threads):
#
# - `spec`: the benchmark's layers written by hand with explicit eager ops
#   from the spec (shared/spec/flash.md §2.2, §3.2 with the padding of §3.5;
#   MHSA as in docs/dsl.md §5.3);
# - `spec-compiled`: the same functions under torch.compile (Inductor);
# - `flash-pytorch`, `flash-pytorch-compiled` (FLASH and GAU rows):
#   lucidrains' FLASH-pytorch 0.1.9 `FLASH` / `GAU` modules as its
#   FLASHTransformer configures them (rotary on 32 features, T5 bias,
#   LayerNorm), eager and under torch.compile; they compute what
#   shared/spec/flash-pytorch.md says, about the same work as the spec;
# - `sdpa`, `sdpa-compiled` (MHSA): the spec's layer with
#   torch.nn.functional.scaled_dot_product_attention(is_causal=True).
#
# Each implementation the Python can run is timed (torch.compile needs torch
# 2; FLASH-pytorch its package: bench/make-peer-venv.sh makes a venv with
# both). It prints one JSON object: every implementation's median (or its
# error), and at the top level the fastest one's. It is not a dependency of
# attnc: attnc-bench runs it only when a Python with torch is found.
#
#   torch_peer.py --model flash_causal --n 4096 --threads 2
#   torch_peer.py --model mhsa_causal --n 1024 --impls spec,sdpa
#   torch_peer.py --probe        # {"torch": "<version>", ...} when importable
#
#===----------------------------------------------------------------------===#
import argparse
import json
import math
import resource
import sys
import time

D, E, S, CHUNK, HEADS, MAX_LEN = 512, 1024, 128, 256, 8, 512
MODELS = ("flash_causal", "flash_noncausal", "gau_causal", "mhsa_causal")
# The implementations of each model, in the order they are timed.
IMPLS = {
    "flash_causal": ("spec", "spec-compiled", "flash-pytorch",
                     "flash-pytorch-compiled"),
    "flash_noncausal": ("spec", "spec-compiled", "flash-pytorch",
                        "flash-pytorch-compiled"),
    "gau_causal": ("spec", "spec-compiled", "flash-pytorch",
                   "flash-pytorch-compiled"),
    "mhsa_causal": ("spec", "spec-compiled", "sdpa", "sdpa-compiled"),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--probe", action="store_true",
                   help="print the torch version as JSON and exit")
    p.add_argument("--model", choices=MODELS)
    p.add_argument("--n", type=int, default=1024, help="sequence length")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--min-runs", type=int, default=5)
    p.add_argument("--min-seconds", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--impls", default="",
                   help="comma-separated implementations (default: all of "
                        "the model's that this Python can run)")
    return p.parse_args()


def make_weights(torch, model):
    """Random weights like attnc's: matrices N(0, 1/in), gains 1 + 0.1 N,
    biases, offsets and bias tables 0.1 N."""
    g = torch.Generator().manual_seed(1)

    def mat(i, o):
        return torch.randn(i, o, generator=g) / math.sqrt(i)

    def vec(*shape, base=0.0):
        return base + 0.1 * torch.randn(*shape, generator=g)

    w = {"ln_w": vec(D, base=1.0), "ln_b": vec(D)}
    if model == "mhsa_causal":
        w.update(w_qkv=mat(D, 3 * D), b_qkv=vec(3 * D),
                 w_o=mat(D, D), b_o=vec(D))
        return w
    rows = 2 if model == "gau_causal" else 4
    table = 2 * (MAX_LEN if model == "gau_causal" else CHUNK) - 1
    w.update(w_uvz=mat(D, 2 * E + S), b_uvz=vec(2 * E + S),
             gamma=vec(rows, S, base=1.0), beta=vec(rows, S),
             rel_pos=vec(table), w_o=mat(E, D), b_o=vec(D))
    return w


def rope_half(torch, x, positions):
    """Half-split RoPE over the last axis; `positions` index axis 1 of x."""
    half = x.shape[-1] // 2
    inv_freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
    theta = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    shape = [theta.shape[0]] + [1] * (x.dim() - 3) + [half]
    cos = theta.cos().float().reshape(shape)
    sin = theta.sin().float().reshape(shape)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def toeplitz_index(torch, length, table_half):
    """idx[i, j] = clamp(j - i, -(M-1), M-1) + M - 1 with M = table_half."""
    r = torch.arange(length)
    rel = (r[None, :] - r[:, None]).clamp(-(table_half - 1), table_half - 1)
    return rel + table_half - 1


def flash(torch, F, x, w, causal, buf):
    """FLASH per spec §3.2, padded per §3.5 when CHUNK does not divide n."""
    B, n, _ = x.shape
    h = F.layer_norm(x, (D,), w["ln_w"], w["ln_b"], 1e-5)
    u, v, z = F.silu(h @ w["w_uvz"] + w["b_uvz"]).split([E, E, S], dim=-1)
    base = z.unsqueeze(-2) * w["gamma"] + w["beta"]          # [B, n, 4, s]
    base = rope_half(torch, base, torch.arange(n))           # global positions
    pad = (-n) % CHUNK
    if pad:                       # zero k, q and v after the projections
        base = F.pad(base, (0, 0, 0, 0, 0, pad))
        v = F.pad(v, (0, 0, 0, pad))
    G = (n + pad) // CHUNK
    base = base.reshape(B, G, CHUNK, 4, S)
    quad_q, quad_k, lin_q, lin_k = base.unbind(-2)
    v = v.reshape(B, G, CHUNK, E)
    # local quadratic attention
    qk = torch.einsum("bgns,bgms->bgnm", quad_q, quad_k)
    kernel = F.relu(qk / CHUNK + w["rel_pos"][buf["bias_index"]]) ** 2
    if causal:
        kernel = kernel * buf["tril"]
    if pad:                       # padded keys contribute nothing
        kernel = kernel * buf["key_mask"]
    quadratic = torch.einsum("bgnm,bgme->bgne", kernel, v)
    # global linear attention
    lin_kv = torch.einsum("bgnk,bgne->bgke", lin_k, v) / CHUNK
    if causal:                    # exclusive prefix over chunks
        lin_kv = torch.cat([torch.zeros_like(lin_kv[:, :1]),
                            lin_kv.cumsum(dim=1)[:, :-1]], dim=1)
    else:
        lin_kv = lin_kv.sum(dim=1, keepdim=True)
    linear = torch.einsum("bgnk,bgke->bgne", lin_q, lin_kv)
    o = u * (quadratic + linear).reshape(B, G * CHUNK, E)[:, :n]
    return o @ w["w_o"] + w["b_o"] + x


def gau(torch, F, x, w, buf):
    """Causal GAU per spec §2.2 (Toeplitz bias clamped at max_len)."""
    n = x.shape[1]
    h = F.layer_norm(x, (D,), w["ln_w"], w["ln_b"], 1e-5)
    u, v, z = F.silu(h @ w["w_uvz"] + w["b_uvz"]).split([E, E, S], dim=-1)
    positions = torch.arange(n)
    q = rope_half(torch, z * w["gamma"][0] + w["beta"][0], positions)
    k = rope_half(torch, z * w["gamma"][1] + w["beta"][1], positions)
    qk = q @ k.transpose(-1, -2)
    a = F.relu(qk / n + w["rel_pos"][buf["bias_index"]]) ** 2
    a = a * buf["tril"]
    return (u * (a @ v)) @ w["w_o"] + w["b_o"] + x


def mhsa(torch, F, x, w, buf, sdpa=False):
    """Causal multi-head softmax attention: explicit softmax, or torch's
    scaled_dot_product_attention with `sdpa`."""
    B, n, _ = x.shape
    dh = D // HEADS
    h = F.layer_norm(x, (D,), w["ln_w"], w["ln_b"], 1e-5)
    q, k, v = (h @ w["w_qkv"] + w["b_qkv"]).split([D, D, D], dim=-1)
    q, k, v = (t.reshape(B, n, HEADS, dh).transpose(1, 2) for t in (q, k, v))
    if sdpa:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        scores = scores.masked_fill(buf["future"], float("-inf"))
        o = scores.softmax(dim=-1) @ v
    o = o.transpose(1, 2).reshape(B, n, D)
    return o @ w["w_o"] + w["b_o"] + x


def flash_pytorch_layer(torch, model):
    """FLASH-pytorch's FLASH or GAU module for `model`, configured as its
    FLASHTransformer does (shared/spec/flash-pytorch.md)."""
    import flash_pytorch
    torch.manual_seed(1)
    if model == "gau_causal":
        module = flash_pytorch.GAU(dim=D, query_key_dim=S,
                                   expansion_factor=E / D, causal=True)
    else:
        from rotary_embedding_torch import RotaryEmbedding
        module = flash_pytorch.FLASH(
            dim=D, group_size=CHUNK, query_key_dim=S, expansion_factor=E / D,
            causal=model == "flash_causal",
            rotary_pos_emb=RotaryEmbedding(dim=min(32, S)))
    return module.eval()


def make_layer(torch, F, model, impl, x, n):
    """A function of x computing `model` with `impl`."""
    base = impl[:-len("-compiled")] if impl.endswith("-compiled") else impl
    if base == "flash-pytorch":
        layer = flash_pytorch_layer(torch, model)
    else:
        w = make_weights(torch, model)
        buf = buffers(torch, model, n)
        if model.startswith("flash"):
            causal = model == "flash_causal"
            layer = lambda x: flash(torch, F, x, w, causal, buf)  # noqa: E731
        elif model == "gau_causal":
            layer = lambda x: gau(torch, F, x, w, buf)  # noqa: E731
        else:
            sdpa = base == "sdpa"
            layer = lambda x: mhsa(torch, F, x, w, buf, sdpa)  # noqa: E731
    if impl.endswith("-compiled"):
        layer = torch.compile(layer)
    return layer


def time_layer(torch, layer, x, args):
    """Median and minimum of the timed runs (ms), their count, and the
    last output."""
    times = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            y = layer(x)
        begin = time.perf_counter()
        while len(times) < args.min_runs or \
                time.perf_counter() - begin < args.min_seconds:
            start = time.perf_counter()
            y = layer(x)
            times.append((time.perf_counter() - start) * 1e3)
            if len(times) >= 1000:
                break
    times.sort()
    mid = len(times) // 2
    median = (times[mid] if len(times) % 2
              else 0.5 * (times[mid - 1] + times[mid]))
    return median, times[0], len(times), y


def buffers(torch, model, n):
    """Per-length constants a module would keep as buffers."""
    if model == "mhsa_causal":
        return {"future": torch.ones(n, n, dtype=torch.bool).triu(1)}
    if model == "gau_causal":
        return {"bias_index": toeplitz_index(torch, n, MAX_LEN),
                "tril": torch.ones(n, n).tril()}
    pad = (-n) % CHUNK
    key_mask = torch.ones((n + pad) // CHUNK, CHUNK)
    key_mask.view(-1)[n:] = 0
    return {"bias_index": toeplitz_index(torch, CHUNK, CHUNK),
            "tril": torch.ones(CHUNK, CHUNK).tril(),
            "key_mask": key_mask[None, :, None, :]}


def available_impls(torch, model):
    """The implementations of `model` this Python can run."""
    impls = []
    compiles = hasattr(torch, "compile")
    try:
        import flash_pytorch  # noqa: F401
        have_flash = True
    except Exception:  # noqa: BLE001 - not installed: no such peer
        have_flash = False
    for impl in IMPLS[model]:
        if impl.endswith("-compiled") and not compiles:
            continue
        if impl.startswith("flash-pytorch") and not have_flash:
            continue
        if impl.startswith("sdpa") and not hasattr(
                torch.nn.functional, "scaled_dot_product_attention"):
            continue
        impls.append(impl)
    return impls


def main():
    args = parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as error:  # noqa: BLE001 - any import failure means n/a
        print(json.dumps({"error": "torch is not importable: %s" % error}))
        return 2
    if args.probe:
        print(json.dumps({"torch": torch.__version__,
                          "impls": {m: available_impls(torch, m)
                                    for m in MODELS}}))
        return 0
    if args.model is None:
        print(json.dumps({"error": "--model is required"}))
        return 2
    torch.set_num_threads(args.threads)
    impls = [i for i in args.impls.split(",") if i] or \
        available_impls(torch, args.model)
    unknown = [i for i in impls if i not in IMPLS[args.model]]
    if unknown:
        print(json.dumps({"error": "unknown implementation(s) of %s: %s"
                          % (args.model, ", ".join(unknown))}))
        return 2
    x = torch.randn(1, args.n, D, generator=torch.Generator().manual_seed(2))
    peers, best = [], None
    for impl in impls:
        try:
            layer = make_layer(torch, F, args.model, impl, x, args.n)
            median, low, runs, y = time_layer(torch, layer, x, args)
        except Exception as error:  # noqa: BLE001 - report, time the others
            peers.append({"impl": impl, "error": "%s: %s" % (
                type(error).__name__, str(error).splitlines()[0][:200]
                if str(error) else "")})
            continue
        peer = {"impl": impl, "median_ms": median, "min_ms": low,
                "runs": runs, "checksum": float(y.double().sum())}
        peers.append(peer)
        if best is None or median < best["median_ms"]:
            best = peer
    result = {"model": args.model, "n": args.n, "threads": args.threads,
              "torch": torch.__version__, "peers": peers,
              "peak_rss_mib":
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if best is None:
        result["error"] = "no implementation ran: " + "; ".join(
            "%s: %s" % (p["impl"], p["error"]) for p in peers)
        print(json.dumps(result))
        return 1
    result.update(impl=best["impl"], median_ms=best["median_ms"],
                  min_ms=best["min_ms"], runs=best["runs"])
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
