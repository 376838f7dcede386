#!/usr/bin/env python3
#===- bench/torch_peer.py - the PyTorch eager peer of attnc-bench ---------===#
#
# This file is the PyTorch eager peer that attnc-bench compares against: the
# benchmark's layers written by hand with explicit eager ops from the spec
# (shared/spec/flash.md §2.2, §3.2 with the padding of §3.5; MHSA as in
# docs/dsl.md §5.3), fp32, batch 1, d = 512, e = 1024, s = 128, C = 256,
# timed under torch.inference_mode() with torch.set_num_threads(threads).
# It prints one JSON object with the median time. It is not a dependency of
# attnc: attnc-bench runs it only when a Python with torch is found.
#
#   torch_peer.py --model flash_causal --n 4096 --threads 2
#   torch_peer.py --probe        # {"torch": "<version>"} when importable
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


def mhsa(torch, F, x, w, buf):
    """Causal multi-head softmax attention with explicit softmax."""
    B, n, _ = x.shape
    dh = D // HEADS
    h = F.layer_norm(x, (D,), w["ln_w"], w["ln_b"], 1e-5)
    q, k, v = (h @ w["w_qkv"] + w["b_qkv"]).split([D, D, D], dim=-1)
    q, k, v = (t.reshape(B, n, HEADS, dh).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    scores = scores.masked_fill(buf["future"], float("-inf"))
    o = scores.softmax(dim=-1) @ v
    o = o.transpose(1, 2).reshape(B, n, D)
    return o @ w["w_o"] + w["b_o"] + x


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


def main():
    args = parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as error:  # noqa: BLE001 - any import failure means n/a
        print(json.dumps({"error": "torch is not importable: %s" % error}))
        return 2
    if args.probe:
        print(json.dumps({"torch": torch.__version__}))
        return 0
    if args.model is None:
        print(json.dumps({"error": "--model is required"}))
        return 2
    torch.set_num_threads(args.threads)
    w = make_weights(torch, args.model)
    x = torch.randn(1, args.n, D, generator=torch.Generator().manual_seed(2))
    buf = buffers(torch, args.model, args.n)
    if args.model.startswith("flash"):
        causal = args.model == "flash_causal"
        layer = lambda: flash(torch, F, x, w, causal, buf)  # noqa: E731
    elif args.model == "gau_causal":
        layer = lambda: gau(torch, F, x, w, buf)  # noqa: E731
    else:
        layer = lambda: mhsa(torch, F, x, w, buf)  # noqa: E731
    times = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            y = layer()
        begin = time.perf_counter()
        while len(times) < args.min_runs or \
                time.perf_counter() - begin < args.min_seconds:
            start = time.perf_counter()
            y = layer()
            times.append((time.perf_counter() - start) * 1e3)
            if len(times) >= 1000:
                break
    times.sort()
    mid = len(times) // 2
    median = (times[mid] if len(times) % 2
              else 0.5 * (times[mid - 1] + times[mid]))
    print(json.dumps({
        "model": args.model, "n": args.n, "threads": args.threads,
        "torch": torch.__version__, "median_ms": median, "min_ms": times[0],
        "runs": len(times), "checksum": float(y.double().sum()),
        "peak_rss_mib":
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
