#!/usr/bin/env python3
"""Writes an int64 ('<i8') C-order .npy file of token ids for the CLI tests
(no numpy needed): element i is (7 * i) % VOCAB, except the elements that
--set INDEX=VALUE gives (flat index).

usage: make_ids.py OUT.npy VOCAB DIM [DIM...] [--set INDEX=VALUE ...]
"""
import struct
import sys

args = sys.argv[1:]
sets = {}
while "--set" in args:
    at = args.index("--set")
    index, value = args[at + 1].split("=")
    sets[int(index)] = int(value)
    del args[at:at + 2]
path, vocab, dims = args[0], int(args[1]), [int(d) for d in args[2:]]
count = 1
for d in dims:
    count *= d
values = [sets.get(i, (7 * i) % vocab) for i in range(count)]
shape = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
header = "{'descr': '<i8', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%dq" % count, *values))
