#!/usr/bin/env python3
"""Parity of converted FLASH-pytorch layers with FLASH-pytorch itself.

Builds small FLASH-pytorch 0.1.9 `FLASH` and `GAU` layers and
`FLASHTransformer`s (token ids to logits) with random weights (every
parameter drawn, not left at its initial value), saves their state_dicts, converts each with tools/convert-flash-pytorch, runs the .attn
model through `attnc run`, and compares the output with FLASH-pytorch's in
float64: max |attnc - torch| / max |torch| <= 1e-4, for causal and
non-causal layers, n a multiple of the group size and not, batch 2. The
causal FLASHTransformer is also decoded with `attnc generate` (20 prompt
ids, 24 greedy steps across group boundaries): each id must be
FLASH-pytorch's argmax at its position. With --generate-app, the example
app of examples/generate (a C program linking the decoding library of the
same model) must then generate the same ids from the converted weights.

FLASH-pytorch is not a dependency of attnc: this test makes a virtual
environment of its own (`--venv`, over Debian's python3-torch) and installs
FLASH-pytorch 0.1.9 and its two small dependencies from PyPI into it. Where
PyPI cannot be reached, it reports a skip (exit 77), never a pass.

    flash_pytorch_parity.py --attnc build/bin/attnc --venv build/parity-venv
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONVERTER = ROOT / "tools/convert-flash-pytorch/convert_flash_pytorch.py"
SKIP = 77
# torch 1.13 (Debian) runs rotary-embedding-torch up to 0.3.x; FLASH-pytorch
# 0.1.9 needs only RotaryEmbedding(dim) and rotate_queries_or_keys.
PACKAGES = ["flash-pytorch==0.1.9", "rotary-embedding-torch==0.3.0",
            "einops==0.6.1"]
TOLERANCE = 1e-4


def ensure_venv(venv):
    """The venv's python with FLASH-pytorch importable, or exits with SKIP."""
    python = venv / "bin" / "python3"
    probe = [str(python), "-c", "import torch, flash_pytorch"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    if subprocess.run([sys.executable, "-c", "import torch"],
                      capture_output=True).returncode != 0:
        print("SKIP: this python has no torch (Debian: python3-torch)")
        sys.exit(SKIP)
    made = subprocess.run([sys.executable, "-m", "venv",
                           "--system-site-packages", str(venv)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        print("SKIP: cannot make a venv (Debian: python3-venv):\n"
              + made.stderr[-2000:])
        sys.exit(SKIP)
    pip = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                          "--no-deps", "--disable-pip-version-check",
                          "--timeout", "30", *PACKAGES],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        print("SKIP: cannot install FLASH-pytorch from PyPI:\n"
              + pip.stderr[-2000:])
        sys.exit(SKIP)
    if subprocess.run(probe, capture_output=True).returncode != 0:
        print("FAIL: FLASH-pytorch installed but does not import")
        sys.exit(1)
    return python


# Each case: (name, module kind, constructor keywords, converter options,
# sequence lengths). dim 64, query_key_dim 32 (rotary on 16 of them), group
# 16: n = 37 pads the last group, n = 48 does not.
CASES = [
    ("flash_causal_rotary_shift_scalenorm", "FLASH",
     dict(causal=True, rotary=16, shift_tokens=True, norm="scale"),
     ["--causal", "--group-size", "16", "--shift-tokens"], [37, 48]),
    ("flash_causal_layernorm", "FLASH",
     dict(causal=True, rotary=16, shift_tokens=False, norm="layer"),
     ["--causal", "--group-size", "16"], [37]),
    ("flash_bidirectional_rotary_shift", "FLASH",
     dict(causal=False, rotary=16, shift_tokens=True, norm="layer"),
     ["--group-size", "16", "--shift-tokens"], [37, 48]),
    ("flash_bidirectional_no_rotary_scalenorm", "FLASH",
     dict(causal=False, rotary=0, shift_tokens=False, norm="scale"),
     ["--group-size", "16"], [37]),
    ("gau_causal", "GAU", dict(causal=True, norm="layer"),
     ["--causal"], [37]),
    ("gau_bidirectional_scalenorm", "GAU", dict(causal=False, norm="scale"),
     [], [37]),
    # Its defaults: ScaleNorm, token shift, rotary on min(32, s) features.
    ("transformer_causal", "FLASHTransformer", dict(causal=True),
     ["--causal", "--group-size", "16", "--shift-tokens"], [37, 48]),
    ("transformer_bidirectional", "FLASHTransformer", dict(causal=False),
     ["--group-size", "16", "--shift-tokens"], [37]),
]


def build_module(kind, options, seed):
    """A FLASH-pytorch layer with every parameter drawn at random."""
    import torch
    from flash_pytorch import FLASH, GAU, FLASHTransformer
    from flash_pytorch.flash_pytorch import ScaleNorm
    from rotary_embedding_torch import RotaryEmbedding
    torch.manual_seed(seed)
    norm = ScaleNorm if options.get("norm") == "scale" else torch.nn.LayerNorm
    if kind == "FLASHTransformer":
        module = FLASHTransformer(dim=64, num_tokens=50, depth=2,
                                  group_size=16, query_key_dim=32,
                                  causal=options["causal"])
    elif kind == "FLASH":
        rotary = (RotaryEmbedding(dim=options["rotary"])
                  if options["rotary"] else None)
        module = FLASH(dim=64, group_size=16, query_key_dim=32,
                       causal=options["causal"], rotary_pos_emb=rotary,
                       norm_klass=norm, shift_tokens=options["shift_tokens"])
    else:
        module = GAU(dim=64, query_key_dim=32, causal=options["causal"],
                     norm_klass=norm)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if name.endswith("freqs"):
                continue  # the rotary frequencies are not trained
            scale = 0.2 if parameter.dim() > 1 else 0.5
            parameter.copy_(torch.randn_like(parameter) * scale
                            + (1.0 if name.endswith(("norm.weight", "norm.g",
                                                     "gamma")) else 0.0))
    return module.double().eval()


def run_case(python, attnc, app, case, work):
    """Failures of one case as strings (empty when it passes)."""
    import numpy as np
    import torch
    name, kind, options, convert_args, lengths = case
    module = build_module(kind, options, seed=len(name))
    checkpoint = work / f"{name}.pt"
    torch.save(module.state_dict(), checkpoint)
    prefix = work / name
    converted = subprocess.run(
        [str(python), str(CONVERTER), str(checkpoint), "-o", str(prefix),
         *convert_args], capture_output=True, text=True)
    if converted.returncode != 0:
        return [f"{name}: the converter failed:\n{converted.stderr}"]
    failures = []
    output = "logits" if kind == "FLASHTransformer" else "y"
    input_name = "ids" if kind == "FLASHTransformer" else "x"
    for n in lengths:
        rng = np.random.default_rng(n)
        with torch.no_grad():
            if kind == "FLASHTransformer":
                ids = rng.integers(0, 50, (2, n))
                expected = module(torch.from_numpy(ids)).numpy()
                x = ids.astype(np.int32)
            else:
                x = rng.standard_normal((2, n, 64))
                expected = module(torch.from_numpy(x)).numpy()
        np.save(work / "x.npy",
                x if x.dtype == np.int32 else x.astype(np.float32))
        ran = subprocess.run(
            [attnc, "run", f"{prefix}.attn", "--weights",
             f"{prefix}.safetensors",
             "--input", f"{input_name}={work / 'x.npy'}",
             "--output", f"{output}={work / 'y.npy'}", "--threads", "2"],
            capture_output=True, text=True)
        if ran.returncode != 0:
            failures.append(f"{name} n={n}: attnc run failed:\n{ran.stderr}")
            continue
        got = np.load(work / "y.npy").astype(np.float64)
        error = np.abs(got - expected).max() / np.abs(expected).max()
        status = "ok" if error <= TOLERANCE else "FAIL"
        print(f"{status:4} {name:44} n={n:3}  max|attnc - torch| / "
              f"max|torch| = {error:.2e}")
        if error > TOLERANCE:
            failures.append(f"{name} n={n}: relative error {error:.2e} > "
                            f"{TOLERANCE}")
    if kind == "FLASHTransformer" and options["causal"]:
        failures += check_generate(attnc, app, module, prefix, name)
    return failures


def check_generate(attnc, app, module, prefix, name):
    """`attnc generate` on the converted model: its greedy ids are
    FLASH-pytorch's argmax at each position of the prompt followed by the
    ids generated before (positions whose two largest logits are closer
    than 1e-3 of the largest are not compared: float32 may order them
    either way)."""
    import numpy as np
    import torch
    prompt = [int(i) for i in np.random.default_rng(5).integers(0, 50, 20)]
    ran = subprocess.run(
        [attnc, "generate", f"{prefix}.attn", "--weights",
         f"{prefix}.safetensors", "--prompt-ids", ",".join(map(str, prompt)),
         "--steps", "24", "--threads", "2"], capture_output=True, text=True)
    if ran.returncode != 0:
        return [f"{name}: attnc generate failed:\n{ran.stderr}"]
    line = next(l for l in ran.stdout.splitlines()
                if l.startswith("generated:"))
    generated = [int(t) for t in line.split()[1:]]
    ids = torch.tensor([prompt + generated[:-1]])
    with torch.no_grad():
        logits = module(ids)[0].numpy()
    compared = 0
    for i, got in enumerate(generated):
        row = np.sort(logits[len(prompt) - 1 + i])
        if row[-1] - row[-2] < 1e-3 * abs(row[-1]):
            continue
        compared += 1
        want = int(logits[len(prompt) - 1 + i].argmax())
        if got != want:
            return [f"{name}: attnc generate chose {got} at step {i}, "
                    f"FLASH-pytorch's argmax is {want}"]
    print(f"ok   {name:44} generate: {compared} of {len(generated)} greedy "
          f"ids compared, all FLASH-pytorch's argmax")
    if compared < len(generated) // 2:
        return [f"{name}: only {compared} of {len(generated)} steps had a "
                f"clear argmax"]
    return check_app(app, prefix, name, prompt, generated)


def check_app(app, prefix, name, prompt, generated):
    """The generating example app (examples/generate, a C program linking
    the library of the same model, tiny_lm.attn) on the converted weights:
    the ids `attnc generate` chose."""
    if not app:
        return []
    ran = subprocess.run(
        [app, f"{prefix}.safetensors", ",".join(map(str, prompt)),
         str(len(generated))], capture_output=True, text=True)
    if ran.returncode != 0:
        return [f"{name}: the generate app failed:\n{ran.stderr}"]
    line = next((l for l in ran.stdout.splitlines()
                 if l.startswith("generated:")), "")
    if [int(t) for t in line.split()[1:]] != generated:
        return [f"{name}: the generate app printed '{line}', attnc "
                f"generate {generated}"]
    print(f"ok   {name:44} the generate app (a C library) chose the same "
          f"{len(generated)} ids")
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnc", required=True)
    parser.add_argument("--venv", required=True, type=pathlib.Path)
    parser.add_argument("--generate-app", default="",
                        help="examples/generate's app, run on the converted "
                             "causal FLASHTransformer")
    parser.add_argument("--inside", action="store_true",
                        help=argparse.SUPPRESS)  # re-run in the venv
    args = parser.parse_args()
    if not args.inside:
        python = ensure_venv(args.venv)
        return subprocess.run([str(python), __file__, "--attnc", args.attnc,
                               "--venv", str(args.venv), "--generate-app",
                               args.generate_app, "--inside"]).returncode
    python = pathlib.Path(sys.executable)
    failures = []
    with tempfile.TemporaryDirectory(prefix="attnc-parity-") as tmp:
        for case in CASES:
            failures += run_case(python, args.attnc, args.generate_app, case,
                                 pathlib.Path(tmp))
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
