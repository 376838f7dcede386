#!/usr/bin/env python3
"""Checks `attnc generate`'s greedy ids against a whole-sequence run (stdlib
only).

usage: greedy_check.py ids OUT.npy PROMPT GENERATED.txt
         writes the ids [1, N] (int64): PROMPT (`1,2,3`) followed by the
         generated ids but the last (the line `generated: ...` of the file)
       greedy_check.py check LOGITS.npy PROMPT GENERATED.txt
         exit 0 when the argmax of the logits [1, N, vocab] (float32) at
         each position from the prompt's last on is the next generated id
"""
import ast
import struct
import sys


def generated(path):
    for line in open(path):
        if line.startswith("generated:"):
            return [int(t) for t in line.split()[1:]]
    sys.exit(path + ": no line 'generated: ...'")


def main():
    mode, path, prompt_text, gen_path = sys.argv[1:5]
    prompt = [int(t) for t in prompt_text.split(",")]
    gen = generated(gen_path)
    if mode == "ids":
        ids = prompt + gen[:-1]
        header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, %d), }" % len(ids)
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
            f.write(struct.pack("<%dq" % len(ids), *ids))
        return
    data = open(path, "rb").read()
    (size,) = struct.unpack("<H", data[8:10])
    header = ast.literal_eval(data[10:10 + size].decode("latin1"))
    _, n, vocab = header["shape"]
    values = struct.unpack("<%df" % (n * vocab), data[10 + size:])
    for i, want in enumerate(gen):
        row = values[(len(prompt) - 1 + i) * vocab:(len(prompt) + i) * vocab]
        got = max(range(vocab), key=lambda v: row[v])
        if got != want:
            sys.exit("step %d: generate chose %d, the whole run's argmax is %d"
                     % (i, want, got))
    print("%d greedy ids match the whole run" % len(gen))


main()
