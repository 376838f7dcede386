#!/usr/bin/python3
"""What calling a compiled model from Python costs on top of the kernel.

Loads examples/flash.attn through the attnc module (random weights), and
times, call by call in one process, the Python call `m(x)` (new output
array each call), `m.run({'x': x}, out=...)` (output array reused, as the
C entry point writes into the caller's buffer) and, inside each call, the
kernel call alone as the module measures it in C++ around the same entry
the CLI runs (Model.last_run_ms). Overhead = (Python call - kernel) /
kernel, median over the calls; the FMA peak and `attnc bench`'s median of
the same model and size are printed beside it for context.

  PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py \
      --attnc build/bin/attnc --n 1024 --threads 2
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attnc", default=os.path.join(ROOT, "build/bin/attnc"))
    parser.add_argument("--model", default=os.path.join(ROOT, "examples/flash.attn"))
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    import attnc

    peak = subprocess.run([os.path.join(os.path.dirname(args.attnc), "fma_peak"),
                           "--threads", str(args.threads)],
                          capture_output=True, text=True).stdout
    peak = re.search(r"multi .*median +([0-9.]+) GFLOP/s", peak)
    peak = peak.group(1) + " GFLOP/s (median)" if peak else "not measured"
    m = attnc.load(args.model, random_weights=1, threads=args.threads)
    x = np.random.default_rng(0).standard_normal((1, args.n, 512), np.float32)
    out = {"y": np.empty((1, args.n, 512), np.float32)}
    for _ in range(5):
        m(x)
    rows = {"m(x), new output": [], "m.run(out=...)": []}
    for i in range(args.calls):
        for label in rows:  # interleaved: both see the same machine
            start = time.perf_counter()
            if label == "m(x), new output":
                m(x)
            else:
                m.run({"x": x}, out=out)
            call = (time.perf_counter() - start) * 1e3
            rows[label].append((call, m.last_run_ms))
    bench = subprocess.run(
        [args.attnc, "bench", args.model, "--random-weights", "1",
         "--random-inputs", "1", "--dim", f"n={args.n}", "--dim", "b=1",
         "--threads", str(args.threads)], capture_output=True, text=True).stdout
    median = re.search(r"median ([0-9.]+) ms", bench)

    print(f"# {os.path.basename(args.model)}, n = {args.n}, b = 1, "
          f"threads = {args.threads}, {args.calls} calls each, interleaved")
    print(f"# FMA peak: {peak}")
    if median:
        print(f"# attnc bench (CLI, same kernel): median {median.group(1)} ms")
    print("| call | Python call median (ms) | kernel median (ms) | "
          "overhead median (ms) | overhead / kernel |")
    print("|---|---:|---:|---:|---:|")
    for label, samples in rows.items():
        calls = [c for c, _ in samples]
        kernels = [k for _, k in samples]
        over = [c - k for c, k in samples]
        ratio = statistics.median(over) / statistics.median(kernels)
        print(f"| `{label}` | {statistics.median(calls):.3f} | "
              f"{statistics.median(kernels):.3f} | "
              f"{statistics.median(over):.3f} | {100 * ratio:.2f}% |")


if __name__ == "__main__":
    sys.exit(main())
