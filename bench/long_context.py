#!/usr/bin/python3
"""FLASH over long sequences, streamed (`--stream-rows`), and checked.

Times `attnc bench MODEL --stream-rows ROWS` (batch 1; MODEL is
examples/flash.attn, causal, or with --model e.g. examples/flash_bidir.attn,
non-causal, which streams in two sweeps) at each
length under /usr/bin/time -v, and prints per length the median, the time
per token against the first (shortest) length's, and the whole process's
peak resident memory against the bytes of input + output + weights. The FMA
peak is measured before and after.

With --check N it then checks the streamed run's numerics at n = N, with
checks that need no O(n) fp64 reference:
  - the streamed output equals the whole-sequence run's (one pipeline,
    --target host-large_buffers) at n = N;
and for a causal model:
  - its first ROWS rows equal the whole-sequence run on those rows alone
    (a prefix is a model of its own: causality and positions);
  - changing the input from row M on leaves every chunk before M's
    unchanged (causality across blocks).

  bench/long_context.py --attnc build/bin/attnc --lengths 8192,262144,1048576 \\
      --rows 8192 --threads 2 --check 262144
  bench/long_context.py --attnc build/bin/attnc --model examples/flash_bidir.attn \\
      --lengths 8192,262144,1048576 --rows 8192 --threads 2 --check 262144
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D, CHUNK = 512, 256


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + result.stdout + result.stderr)
    return result.stdout + result.stderr


def fma_peak(attnc, threads):
    out = run([os.path.join(os.path.dirname(attnc), "fma_peak"), "--threads", str(threads)])
    return float(re.search(r"multi.*median\s+([0-9.]+) GFLOP/s", out).group(1))


def weight_bytes(attnc, model, tmp):
    path = os.path.join(tmp, "w.safetensors")
    run([attnc, "run", model, "--random-weights", "1", "--random-inputs", "1",
         "--dim", "n=256", "--dim", "b=1", "--save-weights", path])
    return os.path.getsize(path)


def attnc_run(args, x, out, extra):
    xp, yp = out + ".x.npy", out
    np.save(xp, x)
    run([args.attnc, "run", args.model, "--random-weights", "1", "--input", "x=" + xp,
         "--output", "y=" + yp, "--threads", str(args.threads)] + extra)
    os.remove(xp)
    return np.load(yp)


def cleanup(tmp):
    for name in os.listdir(tmp):
        os.remove(os.path.join(tmp, name))
    os.rmdir(tmp)


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attnc", default=os.path.join(ROOT, "build/bin/attnc"))
    parser.add_argument("--model", default=os.path.join(ROOT, "examples/flash.attn"),
                        help="a layer of d = 512 with input x, output y, whose chunks divide 256 "
                             "(FLASH, bench/linear_*.attn; causal or not)")
    parser.add_argument("--lengths", default="8192,262144,1048576")
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--check", type=int, default=0, help="n for the numerics checks (0: none)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="attnc-long-")
    peak_before = fma_peak(args.attnc, args.threads)
    weights = weight_bytes(args.attnc, args.model, tmp)
    with open(args.model) as f:
        causal = re.search(r"causal\s*=\s*false", f.read()) is None
    print(f"{os.path.basename(args.model)} ({'causal' if causal else 'non-causal'}); "
          f"FMA peak {peak_before:.1f} GFLOP/s on {args.threads} threads; weights {weights} bytes")
    print("| n | median (ms) | us/token | × first | GFLOP/s | % of FMA peak | peak RSS (GiB) | in+out+weights (GiB) | RSS / (in+out+weights) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    first = None
    for n in [int(v) for v in args.lengths.split(",")]:
        out = run(["/usr/bin/time", "-v", args.attnc, "bench", args.model, "--random-weights", "1",
                   "--random-inputs", "1", "--dim", f"n={n}", "--dim", "b=1",
                   "--stream-rows", str(args.rows), "--threads", str(args.threads),
                   "--warmup", "1", "--iterations", str(args.iterations), "--min-time", "0"])
        median = float(re.search(r"median ([0-9.]+) ms", out).group(1))
        gflops = float(re.search(r"([0-9.]+) GFLOP/s \(", out).group(1))
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out).group(1)) * 1024
        io = 2 * n * D * 4 + weights
        per_token = median * 1000 / n
        first = first or per_token
        print(f"| {n} | {median:.1f} | {per_token:.2f} | {per_token / first:.2f} | {gflops:.1f} | "
              f"{100 * gflops / peak_before:.1f} | {rss / 2**30:.2f} | {io / 2**30:.2f} | {rss / io:.2f} |",
              flush=True)
    print(f"FMA peak after: {fma_peak(args.attnc, args.threads):.1f} GFLOP/s")
    if not args.check:
        return
    n, rows = args.check, args.rows
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, n, D), dtype=np.float32)
    stream = ["--stream-rows", str(rows)]
    streamed = attnc_run(args, x, os.path.join(tmp, "streamed.npy"), stream)
    whole = attnc_run(args, x, os.path.join(tmp, "whole.npy"), ["--target", "host-large_buffers"])
    failures = 0

    def check(name, value, limit):
        nonlocal failures
        ok = value <= limit
        failures += not ok
        print(f"check {'PASS' if ok else 'FAIL'}: {name}: {value:.2e} (limit {limit:.0e})")

    check(f"streamed vs whole-sequence run at n = {n}, max |diff| / max |whole|",
          relative(streamed, whole), 1e-5)
    del whole
    if not causal:
        cleanup(tmp)
        sys.exit(1 if failures else 0)
    prefix = attnc_run(args, x[:, :rows], os.path.join(tmp, "prefix.npy"), [])
    check(f"first {rows} rows vs the model run on them alone", relative(streamed[:, :rows], prefix), 1e-5)
    cut = n // 2 + 100  # inside a chunk, inside a block
    changed = x.copy()
    changed[:, cut:] = rng.standard_normal((1, n - cut, D), dtype=np.float32)
    later = attnc_run(args, changed, os.path.join(tmp, "changed.npy"), stream)
    kept = cut // CHUNK * CHUNK
    check(f"rows before the chunk of row {cut} after changing rows {cut}.. (max |diff|)",
          float(np.abs(later[:, :kept] - streamed[:, :kept]).max()), 0.0)
    check(f"rows from row {cut} on did change (1 / max |diff|)",
          1.0 / max(float(np.abs(later[:, cut:] - streamed[:, cut:]).max()), 1e-30), 1e3)
    cleanup(tmp)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
