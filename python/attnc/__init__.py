"""attnc: compiled attention layers (GAU, FLASH, MHSA, ...) from Python.

    import numpy as np, attnc
    m = attnc.load("examples/flash.attn", weights="flash.safetensors", threads=2)
    x = np.random.randn(1, 1024, 512).astype(np.float32)
    y = m(x)                      # numpy in, numpy out; torch in, torch out

`load` compiles a model of an .attn file for the host through the JIT (and
the compile cache, as `attnc run` does) and binds its weights; the model is
then called on float32 arrays. C-contiguous float32 numpy arrays and CPU
torch tensors (through their numpy view; other DLPack producers through
numpy.from_dlpack) are read where they are, without a copy; outputs are new
numpy arrays (or torch tensors sharing their memory), or the arrays given
as `out`. Other arrays: float64 (or any dtype but float32) is an InputError,
never converted behind your back; a non-contiguous float32 array is copied
into a contiguous one first. `compile` writes the AOT library and header
(`attnc compile`), `emit` returns a stage's text (`attnc --emit`).

Errors are attnc.Error; attnc.CompileError carries the diagnostics the CLI
prints (file:line:col, the source line and a caret); attnc.InputError (also
a ValueError) a wrong, missing or unknown input or weight, naming it and
both shapes. docs/runtime.md, "Python", documents the API.
"""
import collections
import errno as _errno
import os as _os
import warnings as _warnings

import numpy as _np

from . import _attnc
from ._attnc import CompileError, Error, InputError, __version__

__all__ = ["load", "compile", "emit", "Model", "Decoder", "TensorSpec", "Error",
           "CompileError", "InputError", "__version__"]

TensorSpec = collections.namedtuple("TensorSpec", "name shape dtype")
TensorSpec.__doc__ = """A model's input, output or weight: its name, its
shape (an int per static dim, the runtime dim's name, e.g. 'n', otherwise)
and its dtype ('float32', or 'int32' for token ids)."""


def _is_torch(value):
    return type(value).__module__.split(".")[0] == "torch"


def _as_array(value, role, name):
    """The numpy array a kernel reads for `value`: itself (a C-contiguous
    ndarray), a view of a CPU torch tensor's memory (DLPack), a contiguous
    copy of a non-contiguous array, or an array of a Python sequence
    (float32). The dtype is checked by the C++ half."""
    if isinstance(value, _np.ndarray):
        array = value
    elif _is_torch(value):
        if value.requires_grad:
            value = value.detach()
        if value.device.type != "cpu":
            raise InputError(f"{role} '{name}' is a torch tensor on "
                             f"{value.device}; attnc runs on the host: pass "
                             f"a CPU tensor (.cpu())")
        if not value.is_contiguous():
            value = value.contiguous()
        array = value.numpy()  # the tensor's memory, writeable
    elif hasattr(value, "__dlpack__"):
        array = _np.from_dlpack(value)
    elif hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        array = _np.asarray(value)
    else:
        try:
            array = _np.asarray(value, dtype=_np.float32)
        except (TypeError, ValueError) as error:
            raise InputError(f"{role} '{name}' is a {type(value).__name__} "
                             f"that is not an array of numbers ({error})")
    if not array.flags.c_contiguous:
        array = _np.ascontiguousarray(array)
    return array


def _source(path):
    """`path` as a string, checked to be a file (FileNotFoundError)."""
    path = str(path)
    if not _os.path.isfile(path):
        raise FileNotFoundError(_errno.ENOENT, "no such .attn file", path)
    return path


class Model:
    """A model compiled for the host with its weights; call it on inputs.

    `inputs`, `outputs` and `weights` map each tensor's name to its
    TensorSpec, in the model's order."""

    def __init__(self, compiled):
        self._model = compiled
        describe = lambda specs: collections.OrderedDict(
            (name, TensorSpec(name, shape, dtype))
            for name, shape, dtype in specs)
        self.inputs = describe(compiled.inputs())
        self.outputs = describe(compiled.outputs())
        self.weights = describe(compiled.weights())

    def run(self, inputs, out=None):
        """Runs on `inputs` (name -> array or tensor) and returns every
        output by name. Outputs are written into the arrays of `out` (name
        -> float32 C-contiguous array or CPU tensor of the output's shape;
        it is returned as given) where given,
        into new arrays otherwise. With a torch tensor among the inputs
        the outputs are torch tensors (sharing the arrays' memory)."""
        if not isinstance(inputs, dict):
            raise InputError("run() takes a dict of the model's inputs by "
                             "name: " + ", ".join(self.inputs))
        arrays = {name: _as_array(value, "input", name)
                  for name, value in inputs.items()}
        outs = {}
        for name, value in (out or {}).items():
            array = value.detach().numpy() if _is_torch(value) else value
            if not isinstance(array, _np.ndarray):
                raise InputError(f"output '{name}' must be a numpy array or "
                                 f"a CPU torch tensor")
            outs[name] = array
        results = self._model.run(arrays, outs)
        if any(_is_torch(value) for value in inputs.values()):
            import torch
            results = {name: torch.from_numpy(array)
                       for name, array in results.items()}
        # An output given as `out` comes back as the object given.
        results.update((out or {}).items())
        return results

    def __call__(self, *args, **kwargs):
        """m(x) or m(x=x): the inputs by position (the model's order) or by
        name. Returns the output, or a tuple of the outputs in the model's
        order when it has several."""
        results = self.run(self._named_inputs(args, kwargs))
        values = tuple(results[name] for name in self.outputs)
        return values[0] if len(values) == 1 else values

    def decoder(self, capacity=None):
        """A Decoder of one sequence: the model (loaded with decode=True)
        run incrementally, a prompt then a token at a time. A model that
        attends over the whole sequence (GAU, MHSA) keeps a key/value cache
        of `capacity` rows, the most the sequence will hold."""
        return Decoder(self, capacity)

    def _named_inputs(self, args, kwargs):
        """The inputs of m(...) or d.append(...) by name: by position (the
        model's order) or by name."""
        names = list(self.inputs)
        if len(args) > len(names):
            raise InputError(f"the model takes {len(names)} input(s) "
                             f"({', '.join(names)}), not {len(args)}")
        inputs = dict(zip(names, args))
        for name, value in kwargs.items():
            if name in inputs:
                raise InputError(f"input '{name}' given twice")
            inputs[name] = value
        return inputs

    @property
    def last_buffers(self):
        """Data addresses of the buffers the last run gave the kernel, by
        tensor name: an input's is its array's own when it was not copied."""
        return dict(self._model.last_buffers)

    @property
    def last_run_ms(self):
        """Milliseconds the last run spent in the kernel call itself (what
        the C entry point would take), without this module's checks."""
        return self._model.last_run_ms

    @property
    def compile_times(self):
        """What compiling cost, by stage (ms), and the cache's hits and
        misses, as `attnc run` prints them."""
        return self._model.compile_times()

    def __repr__(self):
        spec = lambda specs: ", ".join(
            f"{s.name}{list(s.shape)}" for s in specs.values())
        return f"<attnc.Model inputs: {spec(self.inputs)}; outputs: " \
               f"{spec(self.outputs)}; {len(self.weights)} weights>"


class Decoder:
    """One sequence of a causal model decoded incrementally (`attnc
    generate`, codegen/Decode.h): append() the prompt's rows, then a row (a
    token) at a time; each append returns the outputs of its rows, equal to
    the whole-sequence run's at those positions. The state (`state_bytes`)
    is what the layers carry from row to row (per FLASH layer the chunk
    prefix and the current chunk's partial state, keys and values),
    constant in the context, and for attention over the whole sequence
    (GAU, MHSA) key/value caches of the decoder's capacity."""

    def __init__(self, model, capacity=None):
        self._model = model
        self._decoder = _attnc.Decoder(model._model, int(capacity or 0))

    def append(self, *args, **kwargs):
        """Appends rows: the inputs by position or name, batch dims 1
        (token ids: an int32 array [1, r]). Returns the outputs of those r
        rows ([1, r, ...]), or a tuple in the model's order."""
        inputs = self._model._named_inputs(args, kwargs)
        arrays = {name: _as_array(value, "input", name)
                  for name, value in inputs.items()}
        results = self._decoder.append(arrays)
        values = tuple(results[name] for name in self._model.outputs)
        return values[0] if len(values) == 1 else values

    def reset(self):
        """Starts a new sequence."""
        self._decoder.reset()

    @property
    def length(self):
        """Rows appended since the start."""
        return self._decoder.length

    @property
    def state_bytes(self):
        """The state's bytes: constant in length."""
        return self._decoder.state_bytes

    @property
    def block_rows(self):
        """The most rows one kernel call runs: whole chunks (a prompt's) in
        blocks of this many rows; a step computes its one row."""
        return self._decoder.block_rows


def load(path, model=None, weights=None, target="host", threads=None,
         tuning_db=None, schedule="default", random_weights=None,
         cache_dir=None, cache=True, tuning_dims=None, stream_rows=None,
         decode=False):
    """Compiles the model `model` (None: the file's only one) of the .attn
    file `path` for the host and binds its weights.

    weights: a .safetensors file, or a dict name -> array or tensor
        (copied); random_weights: a seed for deterministic random weights
        instead (`attnc run --random-weights`). A model with weights needs
        one of them.
    target: a Halide host target string or family ("host", "avx2", ...).
    threads: the threads Halide's runtime runs kernels on (None: all cores;
        it is the process's thread pool: the last model run sets it).
    tuning_db: a tuning database (`attnc tune --db`): its fastest
        schedules replace the defaults, those tuned nearest to the sizes of
        `tuning_dims` (a dict such as {"n": 1024, "b": 1}; None: the
        largest sizes tuned), as `attnc run --tuning-db` does for the run's
        sizes. How many ops took a tuned schedule is a warning (a remark).
    schedule: "default", "naive", or "tuned" (with tuning_db).
    cache_dir, cache: where compiled kernels are kept (default as for the
        CLI: $ATTNC_CACHE_DIR, else ~/.cache/attnc); cache=False compiles
        anew and keeps nothing.
    stream_rows: run a chunked model (FLASH, linear attention) over
        blocks of this many rows of its sequence, the chunk prefix
        carried between blocks (non-causal: two sweeps, the first summing
        the chunk states; `attnc run --stream-rows`): memory of a block,
        not of the sequence. A model that cannot stream is a CompileError
        at the op.
    decode: compile for incremental decoding (m.decoder(); a streamed
        model in blocks of its chunk, or of stream_rows). A model that
        cannot be decoded (GAU, MHSA: attention over the whole sequence)
        is a CompileError at the op.
    """
    if weights is not None and random_weights is not None:
        raise InputError("give either weights or random_weights, not both")
    compiled = _attnc.Model(_source(path), model or "", target, schedule,
                            int(threads or 0), str(tuning_db or ""),
                            {str(k): int(v)
                             for k, v in (tuning_dims or {}).items()},
                            str(cache_dir or ""), bool(cache),
                            int(stream_rows or 0), bool(decode))
    if compiled.warnings():
        _warnings.warn(compiled.warnings(), stacklevel=2)
    if isinstance(weights, dict):
        compiled.set_weights({name: _as_array(value, "weight", name)
                              for name, value in weights.items()})
    elif weights is not None or random_weights is not None:
        compiled.load_weights(str(weights or ""),
                              -1 if random_weights is None
                              else int(random_weights))
    if compiled.weights() and weights is None and random_weights is None:
        first = compiled.weights()[0]
        raise InputError(f"the model has {len(compiled.weights())} weights "
                         f"(first: '{first[0]}' {list(first[1])}); give "
                         f"weights= (a .safetensors file or a dict of "
                         f"arrays) or random_weights=SEED")
    compiled.check_weights()
    return Model(compiled)


def compile(path, out_dir, target="host", model=None, name=None,
            schedule="default", tuning_db=None, decode=False):
    """Compiles the model ahead of time into `out_dir` (lib<name>.a and
    <name>.h, as `attnc compile`) and returns the paths written. With
    `decode`, the library also decodes incrementally (`attnc compile
    --decode`: <name>_state_new, <name>_prefill, <name>_step)."""
    return _attnc.compile(_source(path), str(out_dir), model or "", target,
                          name or "", schedule, str(tuning_db or ""),
                          bool(decode))


def emit(path, stage="attn", model=None, target="host", schedule="default"):
    """The text `attnc --emit=<stage>` prints: stage is ast, attn,
    attn-primitives, attn-scheduled or halide-stmt."""
    return _attnc.emit(_source(path), stage, model or "", target, schedule)
