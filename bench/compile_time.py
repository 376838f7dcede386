#!/usr/bin/env python3
"""Compile time against depth: examples/flash.attn (one FLASH layer) and
examples/flash_lm.attn with `dim layers = L`, through the attnc binary.

For each depth it takes the median of --repeats runs of
  - `attnc run` (JIT) into a fresh compile cache that holds only Halide's
    runtime (compiled once per machine, as a user's cache does after the
    first compile): the compile time attnc reports ("time: compile X ms"),
    cold, with its Halide lowering and LLVM parts;
  - the same `attnc run` again: the warm-cache compile time;
  - `attnc compile` (AOT): the command's wall time and the library's size,
and prints a Markdown table with each figure as a ratio to one layer's,
measured in the same run. It also reports one compile into an empty cache
directory (the runtime compiled too).

  bench/compile_time.py --attnc build/bin/attnc --layers 1,8,24,48
"""
import argparse
import os
import re
import shutil
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


def jit_compile(attnc, path, n, cache):
    """One `attnc run` through `cache`: (compile s, lowering s, LLVM s)."""
    _, out = run([attnc, "run", path, "--random-weights", "1",
                  "--random-inputs", "1", "--dim", "n=%d" % n, "--dim", "b=1",
                  "--cache-dir", cache])
    total = re.search(r"time: compile ([0-9.]+) ms", out)
    stages = re.search(r"Halide lowering ([0-9.]+) ms, LLVM ([0-9.]+) ms", out)
    if not total or not stages:
        sys.exit("compile_time.py: no compile time in:\n" + out)
    return (float(total.group(1)) / 1000, float(stages.group(1)) / 1000,
            float(stages.group(2)) / 1000)


def measure(attnc, path, n, repeats, workdir, runtime):
    jit, lowering, llvm, warm, aot, size = [], [], [], [], [], 0
    for i in range(repeats):
        cache = tempfile.mkdtemp(dir=workdir, prefix="cache")
        for entry in runtime:
            shutil.copy(entry, cache)
        cold = jit_compile(attnc, path, n, cache)
        jit.append(cold[0])
        lowering.append(cold[1])
        llvm.append(cold[2])
        warm.append(jit_compile(attnc, path, n, cache)[0])
        # One directory per model and run: a library of another depth left
        # in it would be counted too.
        outdir = os.path.join(workdir, "aot-%s-%d" % (os.path.basename(path), i))
        os.makedirs(outdir, exist_ok=True)
        wall, _ = run([attnc, "compile", path, "-o", outdir])
        aot.append(wall)
        size = sum(os.path.getsize(os.path.join(outdir, f))
                   for f in os.listdir(outdir) if f.endswith(".a"))
        print("  %s: run %d: jit compile cold %.2f s (lowering %.2f s, LLVM "
              "%.2f s), warm %.3f s; attnc compile %.2f s" %
              (os.path.basename(path), i + 1, jit[-1], lowering[-1], llvm[-1],
               warm[-1], aot[-1]), file=sys.stderr)
    median = statistics.median
    return (median(jit), median(lowering), median(llvm), median(warm),
            median(aot), size)


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
        # Halide's runtime, compiled once into an empty cache: every cold
        # measurement below starts from a copy of it.
        label, text = model_source(1)
        path = os.path.join(workdir, "model_1.attn")
        with open(path, "w") as f:
            f.write(text)
        primer = os.path.join(workdir, "primer")
        empty = jit_compile(args.attnc, path, args.n, primer)[0]
        runtime = [os.path.join(primer, f) for f in os.listdir(primer)
                   if f.startswith("runtime-")]
        for layers in depths:
            label, text = model_source(layers)
            path = os.path.join(workdir, "model_%d.attn" % layers)
            with open(path, "w") as f:
                f.write(text)
            print("%s ..." % label, file=sys.stderr)
            rows.append((label, layers) + measure(args.attnc, path, args.n,
                                                  args.repeats, workdir,
                                                  runtime))
    base = next(r for r in rows if r[1] == 1)
    print("| model | layers | JIT cold (s) | × one layer | lowering (s) | LLVM (s) "
          "| JIT warm (s) | `attnc compile` (s) | × one layer "
          "| lib<m>.a (KiB) | × one layer |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, layers, jit, lowering, llvm, warm, aot, size in rows:
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f | %d "
              "| %.2f |" %
              (label, layers, jit, jit / base[2], lowering, llvm, warm, aot,
               aot / base[6], size // 1024, size / base[7]))
    print("\nMedians of %d runs each; `attnc run ... --dim n=%d --dim b=1 "
          "--cache-dir DIR` reports the JIT compile time. Cold: DIR holds "
          "Halide's runtime only; warm: the same command again. One layer "
          "into an empty DIR (Halide's runtime compiled too): %.2f s." %
          (args.repeats, args.n, empty))


if __name__ == "__main__":
    main()
