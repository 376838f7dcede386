#!/usr/bin/python3
"""Incremental decoding: step time and state bytes against the context.

Runs `attnc generate MODEL --context C --steps K --bench` at each context,
in turns (C1, C2, C1, C2, ...), with the FMA peak measured before and after,
and prints per context the prefill's tokens/s, the steps' tokens/s (mean
over K - 1 steps: give K - 1 a multiple of the model's chunk, so that every
position in a chunk is stepped equally often), the state's bytes, and the
mean step time against the first context's (the issue asks < 10% apart
between 1,000 and 100,000 tokens).

  bench/decode.py --attnc build/bin/attnc --contexts 1000,100000 \\
      --steps 513 --rounds 3 --threads 2
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + result.stdout + result.stderr)
    return result.stdout


def fma_peak(attnc, threads):
    out = run([os.path.join(os.path.dirname(attnc), "fma_peak"), "--threads", str(threads)])
    return float(re.search(r"multi.*median\s+([0-9.]+) GFLOP/s", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attnc", default=os.path.join(ROOT, "build/bin/attnc"))
    parser.add_argument("--model", default=os.path.join(ROOT, "bench/flash_lm_tokens.attn"))
    parser.add_argument("--contexts", default="1000,100000")
    parser.add_argument("--steps", type=int, default=513)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    if args.steps < 2:
        sys.exit("--steps must be 2 or more (the first token needs no step)")
    print("FMA peak before: %.1f GFLOP/s" % fma_peak(args.attnc, args.threads))
    results = {c: [] for c in contexts}
    for r in range(args.rounds):
        for c in contexts:
            out = run([args.attnc, "generate", args.model, "--random-weights", "1",
                       "--context", str(c), "--steps", str(args.steps), "--bench",
                       "--threads", str(args.threads)])
            prefill = float(re.search(r"prefill [0-9.]+ ms \(([0-9.]+) tokens/s", out).group(1))
            steps = re.search(r": ([0-9.]+) tokens/s \(mean ([0-9.]+) ms\), median ([0-9.]+)", out)
            state = int(re.search(r"state ([0-9]+) bytes", out).group(1))
            results[c].append((prefill, float(steps.group(2)), float(steps.group(3)), state))
            print("round %d context %d: prefill %.0f tokens/s, step mean %.3f ms, "
                  "median %.3f ms, state %d bytes" % ((r, c) + results[c][-1]), flush=True)
    print("FMA peak after: %.1f GFLOP/s" % fma_peak(args.attnc, args.threads))
    first = statistics.median(m for _, m, _, _ in results[contexts[0]])
    print()
    print("| context | prefill tokens/s | step mean (ms, median of %d) | steps tokens/s "
          "| step vs context %d | state bytes |" % (args.rounds, contexts[0]))
    print("|---:|---:|---:|---:|---:|---:|")
    for c in contexts:
        mean = statistics.median(m for _, m, _, _ in results[c])
        prefill = statistics.median(p for p, _, _, _ in results[c])
        states = sorted({s for _, _, _, s in results[c]})
        print("| %d | %.0f | %.3f | %.1f | %.3f | %s |"
              % (c, prefill, mean, 1000.0 / mean, mean / first,
                 ", ".join(str(s) for s in states)))


main()
