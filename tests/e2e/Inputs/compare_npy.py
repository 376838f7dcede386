#!/usr/bin/env python3
"""Compares two float32 .npy files: max |a - b| / max |b| <= TOL (stdlib only).

usage: compare_npy.py GOT.npy WANT.npy [TOL]   (exit 0 when within TOL)
"""
import ast
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path + ": not a .npy file"
    major = data[6]
    if major == 1:
        (size,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (size,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + size].decode("latin1"))
    assert header["descr"] == "<f4" and not header["fortran_order"], path
    body = data[start + size:]
    return header["shape"], struct.unpack("<%df" % (len(body) // 4), body)


got_shape, got = read(sys.argv[1])
want_shape, want = read(sys.argv[2])
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
if got_shape != want_shape:
    sys.exit("shapes differ: %s vs %s" % (got_shape, want_shape))
scale = max(abs(w) for w in want) or 1.0
err = max(abs(g - w) for g, w in zip(got, want)) / scale
print("relative error %.3e (tolerance %.0e)" % (err, tol))
sys.exit(0 if err <= tol else 1)
