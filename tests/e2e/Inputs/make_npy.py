#!/usr/bin/env python3
"""Writes a float32 C-order .npy file (no numpy needed) for the CLI tests.

usage: make_npy.py OUT.npy DIM [DIM...]   (values sin(0.1 * i))
"""
import math
import struct
import sys

path, dims = sys.argv[1], [int(d) for d in sys.argv[2:]]
count = 1
for d in dims:
    count *= d
shape = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % count, *[math.sin(0.1 * i) for i in range(count)]))
