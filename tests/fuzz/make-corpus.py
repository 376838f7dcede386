#!/usr/bin/env python3
#===- make-corpus.py - seed corpora of the libFuzzer targets --------------===#
#
# This script (re)writes the checked-in seed corpora under tests/fuzz/corpus/:
# frontend/ (every .attn model of the repository outside tests/fuzz), schedule/
# (every #attn.schedule and #attn.mask attribute written in the lit tests,
# legal and illegal), and small valid and near-valid safetensors/ and npy/
# files built byte by byte (no numpy needed). Run it from anywhere; it only
# reads the repository and writes the corpus folders.
#
#===----------------------------------------------------------------------===#
import hashlib
import json
import pathlib
import re
import shutil
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def reset(name):
    folder = CORPUS / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def frontend():
    folder = reset("frontend")
    # Every model of the repository outside tests/fuzz: the examples, the
    # benchmarks' token models and the tests' inputs (the language's newer
    # parts, embedding, sinusoidal and FLASH-pytorch's options, live there).
    sources = sorted((ROOT / "examples").rglob("*.attn"))
    sources += sorted((ROOT / "bench").glob("*.attn"))
    sources += sorted(
        path for path in (ROOT / "tests").rglob("*.attn")
        if "fuzz" not in path.relative_to(ROOT / "tests").parts)
    for source in sources:
        relative = source.relative_to(ROOT).as_posix().replace("/", "_")
        shutil.copyfile(source, folder / relative)


def schedule():
    folder = reset("schedule")
    files = sorted((ROOT / "tests" / "dsl").glob("*.mlir"))
    files.append(ROOT / "tests" / "passes" / "attn-tile.mlir")
    attrs = set()
    for path in files:
        attrs.update(re.findall(r"#attn\.(?:schedule|mask)<[^>]*>",
                                path.read_text()))
    for attr in sorted(attrs):
        digest = hashlib.sha1(attr.encode()).hexdigest()[:12]
        (folder / digest).write_text(attr)


def safetensors_bytes(header, data=b"", pad=True):
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors():
    folder = reset("safetensors")
    f32 = struct.pack("<6f", 1.0, -2.0, 0.5, 3.25, -0.0, 1e-3)
    f16 = struct.pack("<4H", 0x3C00, 0xC000, 0x7C00, 0x0001)
    bf16 = struct.pack("<3H", 0x3F80, 0xC040, 0x7F80)
    seeds = {
        "empty": safetensors_bytes({}),
        "f32": safetensors_bytes(
            {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}},
            f32),
        "mixed": safetensors_bytes(
            {"__metadata__": {"format": "pt", "note": "caf\u00e9 \\u"},
             "a.h": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
             "b.bf": {"dtype": "BF16", "shape": [3, 1], "data_offsets": [8, 14]},
             "c": {"dtype": "F32", "shape": [], "data_offsets": [16, 20]},
             "z": {"dtype": "F32", "shape": [0, 5], "data_offsets": [20, 20]}},
            f16 + bf16 + b"\0\0" + f32[:4]),
        "unpadded": safetensors_bytes(
            {"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
            f32[:4], pad=False),
        "i64": safetensors_bytes(
            {"ids": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}},
            b"\1" + b"\0" * 7),
    }
    # Escapes and whitespace that json.dumps would not write.
    header = (b'{ "\\ud83d\\ude00\\n" : {"dtype":"F32",\t"shape":[1],'
              b'\r\n"data_offsets":[0,4]} }')
    seeds["escapes"] = struct.pack("<Q", len(header)) + header + f32[:4]
    for name, data in seeds.items():
        (folder / name).write_bytes(data)


def npy_bytes(descr, shape, data, version=1, fortran=False):
    shape_text = "(" + "".join(f"{n}, " for n in shape).rstrip(" ")
    if len(shape) > 1:
        shape_text = shape_text.rstrip(",")
    shape_text += ")"
    header = (f"{{'descr': '{descr}', 'fortran_order': "
              f"{'True' if fortran else 'False'}, 'shape': {shape_text}, }}")
    prefix = 10 if version == 1 else 12
    header += " " * (-(prefix + len(header) + 1) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return (b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() +
            data)


def npy():
    folder = reset("npy")
    seeds = {
        "scalar": npy_bytes("<f4", [], struct.pack("<f", 2.5)),
        "vector": npy_bytes("<f4", [3], struct.pack("<3f", 1, 2, 3)),
        "matrix": npy_bytes("<f4", [2, 2], struct.pack("<4f", 1, -1, 0.5, 8)),
        "empty": npy_bytes("<f4", [0, 4], b""),
        "rank4": npy_bytes("<f4", [1, 2, 1, 1], struct.pack("<2f", 7, 9)),
        "version2": npy_bytes("<f4", [2], struct.pack("<2f", 1, 2), version=2),
        "version3": npy_bytes("<f4", [1], struct.pack("<f", 1), version=3),
        "fortran1d": npy_bytes("<f4", [2], struct.pack("<2f", 4, 5),
                               fortran=True),
        "float64": npy_bytes("<f8", [1], struct.pack("<d", 1.0)),
    }
    for name, data in seeds.items():
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    frontend()
    schedule()
    safetensors()
    npy()
