#!/usr/bin/env python3
"""Compile time against depth: examples/flash.attn (one FLASH layer) and
examples/flash_lm.attn with `dim layers = L`, through the attnc binary.

For each depth it takes the median of --repeats runs of
  - `attnc run` (JIT): the compile time attnc reports ("time: compile X ms"),
  - `attnc compile` (AOT): the command's wall time and the library's size,
and prints a Markdown table with each figure as a ratio to one layer's,
measured in the same run. There is no compile cache yet (issue #11's
second part), so every run is a cold compile.

  bench/compile_time.py --attnc build/bin/attnc --layers 1,8,24,48
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_source(layers):
    """flash.attn for one layer, flash_lm.attn with `layers` otherwise."""
    if layers == 1:
        name = "flash.attn"
        with open(os.path.join(ROOT, "examples", name)) as f:
            return name, f.read()
    with open(os.path.join(ROOT, "examples", "flash_lm.attn")) as f:
        text = f.read()
    text, count = re.subn(r"dim layers = \d+", "dim layers = %d" % layers, text)
    if count != 1:
        sys.exit("compile_time.py: examples/flash_lm.attn has no 'dim layers = N'")
    return "flash_lm.attn with layers = %d" % layers, text


def run(cmd):
    started = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit("compile_time.py: %s failed:\n%s" % (" ".join(cmd), proc.stdout))
    return wall, proc.stdout


def measure(attnc, path, n, repeats, workdir):
    jit, aot, size = [], [], 0
    for i in range(repeats):
        _, out = run([attnc, "run", path, "--random-weights", "1",
                      "--random-inputs", "1", "--dim", "n=%d" % n, "--dim", "b=1"])
        match = re.search(r"time: compile ([0-9.]+) ms", out)
        if not match:
            sys.exit("compile_time.py: no compile time in:\n" + out)
        jit.append(float(match.group(1)) / 1000)
        outdir = os.path.join(workdir, "aot%d" % i)
        os.makedirs(outdir, exist_ok=True)
        wall, _ = run([attnc, "compile", path, "-o", outdir])
        aot.append(wall)
        size = sum(os.path.getsize(os.path.join(outdir, f))
                   for f in os.listdir(outdir) if f.endswith(".a"))
        print("  %s: run %d: jit compile %.2f s, attnc compile %.2f s" %
              (os.path.basename(path), i + 1, jit[-1], aot[-1]), file=sys.stderr)
    return statistics.median(jit), statistics.median(aot), size


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attnc", default=os.path.join(ROOT, "build", "bin", "attnc"))
    parser.add_argument("--layers", default="1,8,24,48",
                        help="comma-separated depths (1 = examples/flash.attn)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=512,
                        help="sequence length of the `attnc run` (the compile "
                             "does not depend on it)")
    args = parser.parse_args()
    depths = [int(x) for x in args.layers.split(",")]
    if 1 not in depths:
        depths.insert(0, 1)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for layers in depths:
            label, text = model_source(layers)
            path = os.path.join(workdir, "model_%d.attn" % layers)
            with open(path, "w") as f:
                f.write(text)
            print("%s ..." % label, file=sys.stderr)
            rows.append((label, layers) + measure(args.attnc, path, args.n,
                                                  args.repeats, workdir))
    base = next(r for r in rows if r[1] == 1)
    print("| model | layers | JIT compile (s) | × one layer | `attnc compile` (s) "
          "| × one layer | lib<m>.a (KiB) | × one layer |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, layers, jit, aot, size in rows:
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %d | %.2f |" %
              (label, layers, jit, jit / base[2], aot, aot / base[3],
               size // 1024, size / base[4]))
    print("\nMedians of %d runs each; `attnc run ... --dim n=%d --dim b=1` "
          "reports the JIT compile time; cold compiles (no cache)." %
          (args.repeats, args.n))


if __name__ == "__main__":
    main()
