#!/usr/bin/env python3
"""Run time of one model under two attnc binaries, measured in turns.

On a shared machine whose speed drifts, one run of each binary can differ by
10% for reasons that are not the code. This script alternates the binaries
(A, B, A, B, ...) for --rounds rounds, each an `attnc bench` with the same
arguments, measures the FMA peak before and after, and reports per binary the
median of the rounds' medians, the minimum of their minima, and the peak
memory; then B's figures as ratios to A's.

  bench/ab_compare.py --a /tmp/old/attnc --b build/bin/attnc --rounds 5 -- \\
      examples/flash_lm.attn --random-weights 1 --random-inputs 1 \\
      --dim n=8192 --dim b=1 --threads 2 --min-time 0 --iterations 6

--b-extra adds arguments to B's runs only: one binary with and without a
tuning database is `--a build/bin/attnc --b build/bin/attnc --b-extra
"--tuning-db flash.db"`.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(binary, args):
    proc = subprocess.run([binary, "bench"] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.exit("ab_compare.py: %s bench failed:\n%s" % (binary, proc.stdout))
    median = re.search(r"median ([0-9.]+) ms, min ([0-9.]+) ms", proc.stdout)
    peak = re.search(r"peak memory of the pipeline's buffers: ([0-9.]+) MiB",
                     proc.stdout)
    if not median:
        sys.exit("ab_compare.py: no timing in:\n" + proc.stdout)
    return (float(median.group(1)), float(median.group(2)),
            float(peak.group(1)) if peak else float("nan"))


def fma_peak(tool, threads):
    proc = subprocess.run([tool, "--threads", str(threads)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    match = re.search(r"multi\s+\d+ threads\s+best\s+([0-9.]+) GFLOP/s",
                      proc.stdout)
    return float(match.group(1)) if match else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the baseline attnc binary")
    parser.add_argument("--b", required=True, help="the attnc binary compared")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fma-peak",
                        default=os.path.join(ROOT, "build", "bin", "fma_peak"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--a-extra", default="",
                        help="more arguments of A's runs only")
    parser.add_argument("--b-extra", default="",
                        help="more arguments of B's runs only")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER,
                        help="-- then the arguments of `attnc bench`")
    args = parser.parse_args()
    bench_args = args.bench_args[1:] if args.bench_args[:1] == ["--"] \
        else args.bench_args
    peaks = [fma_peak(args.fma_peak, args.threads)]
    results = {"A": [], "B": []}
    for round_index in range(args.rounds):
        for label, binary, extra in (("A", args.a, args.a_extra),
                                     ("B", args.b, args.b_extra)):
            results[label].append(bench(binary,
                                        bench_args + shlex.split(extra)))
            median, minimum, peak = results[label][-1]
            print("round %d %s: median %.1f ms, min %.1f ms, peak %.1f MiB" %
                  (round_index + 1, label, median, minimum, peak),
                  file=sys.stderr)
    peaks.append(fma_peak(args.fma_peak, args.threads))

    summary = {}
    for label in ("A", "B"):
        rows = results[label]
        summary[label] = (statistics.median(r[0] for r in rows),
                          min(r[1] for r in rows), max(r[2] for r in rows))
    print("| binary | median of medians (ms) | min of mins (ms) | peak memory (MiB) |")
    print("|---|---:|---:|---:|")
    for label, binary, extra in (("A", args.a, args.a_extra),
                                 ("B", args.b, args.b_extra)):
        median, minimum, peak = summary[label]
        print("| %s: %s %s | %.1f | %.1f | %.1f |" % (label, binary, extra,
                                                     median, minimum, peak))
    a, b = summary["A"], summary["B"]
    print("\nB / A: median %.3f, min %.3f, peak memory %.3f. %d rounds, "
          "alternating; FMA peak %.1f GFLOP/s before and %.1f after "
          "(%d threads). `attnc bench %s`." %
          (b[0] / a[0], b[1] / a[1], b[2] / a[2], args.rounds, peaks[0],
           peaks[1], args.threads, " ".join(bench_args)))


if __name__ == "__main__":
    main()
