"""Find an input the model really runs on, when the user gave none (or only part of one).

1. What the user fixed wins: ``--example`` arrays, ``--shape``, ``--dim``.
2. Then what the graph says: static dims; shared ``dim_param`` names (``handler.dims.is_shared``)
   are one size wherever they appear; a Conv / ConvTranspose / MatMul / Gemm that reads an input
   directly with a constant weight fixes its channel or feature axis; an ``imgsz``-like metadata
   entry (Ultralytics writes one) is tried first for image sides.
3. The remaining free dims take the sizes of a short ladder, by role: batch (axis 0 of a rank ≥ 2
   input unless named like a sequence, or a dim named like ``batch``) is 1; image sides
   (rank-4/5 float/uint8 inputs) try ``SPATIAL``; every other dim (sequence, samples, features)
   tries ``LENGTHS``. Candidate *k* gives every free dim the *k*-th size of its list; a lone
   anonymous axis between static ones (an RNN state's ``[layers, ?, hidden]``, usually a batch)
   also tries 1 at each rung. Integer scalars (the outermost loop) try ``RATES`` when named like
   a sample rate, else ``SCALARS``; integer tensors try zeros, then ones, then small random
   ints; floats are uniform in [0.05, 0.95) (no log/sqrt of zero or of a negative).
4. Each candidate runs on onnxruntime's CPU provider; the first that runs and gives finite
   outputs is the example. At most ``MAX_ATTEMPTS`` runs within ``MAX_SECONDS``; inputs above
   ``MAX_ELEMENTS`` values are skipped. If none runs: ``NoExampleError`` with the first
   candidate's onnxruntime error (one line) and the flags that would fix it.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import onnx

from handler.dims import is_shared
from handler.manifest import TensorInfo
from onnx_lambda.build_model.errors import ExampleArgumentError, NoExampleError
from onnx_lambda.build_model.example import Feeds, Given, shape_text

LENGTHS = (1, 16, 32, 64, 128, 224, 256, 320, 512, 640, 1024, 16000)
SPATIAL = (224, 256, 320, 384, 416, 512, 640, 1024, 32, 64, 128, 16)
RATES = (16000, 8000, 44100, 48000, 22050, 1)
SCALARS = (1, 0, 16000, 8000, 44100)
VARIANTS = ("zeros", "ones", "small")
MAX_ATTEMPTS = 200
MAX_SECONDS = 120.0
MAX_ELEMENTS = 1 << 24  # 64 MB of float32 per input
GATE_SAMPLES = 8  # the example and 7 more draws at its shapes, fewer for large inputs
GATE_ELEMENTS = 1 << 22
_BATCH_NAMES = re.compile(r".*batch.*|bs", re.IGNORECASE)
_LENGTH_NAMES = re.compile(r".*(seq|len|time|token|frame|sample|step|word|char).*", re.IGNORECASE)
_SIDE_NAMES = re.compile(r".*(height|width)|h|w", re.IGNORECASE)
_RATE_NAMES = re.compile(r"(.*_)?(sr|sample_?rate|rate|fs|freq|hz)(_.*)?", re.IGNORECASE)
_ORT_NOISE = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : |\S*onnxruntime_src/\S+:\d+\s+"
                        r"(\S+\(.*?\)\s+)?(.*? was false\.\s*)?")

Run = Callable[[Feeds], dict[str, object]]


@dataclass(frozen=True)
class Found:
    feeds: Feeds
    how: str  # for the build's output: which sizes and values made it run
    samples: list[Feeds]  # the accuracy gate's inputs, ``feeds`` first


@dataclass
class _Axis:
    label: str  # how a flag names it: the symbol, H/W, or D<axis>
    sizes: tuple[int, ...]  # candidate sizes (one: fixed)
    role: str  # fixed | batch | side | length | lone (see _plan)
    shared: bool = False  # a shared dim_param: ``--dim label=N`` sets it


def find(model: onnx.ModelProto, inputs: tuple[TensorInfo, ...], given: Given,
         run: Run) -> Found:
    """The first candidate ``run`` accepts with finite outputs (see the module docstring)."""
    plan = _plan(model, inputs, given)
    foreign = [f"{s.name} ({s.dtype})" for s in inputs
               if s.name not in given.arrays and _kind(s.dtype) == "?"]
    if foreign:
        raise NoExampleError(f"cannot make values for input(s) {', '.join(foreign)}: pass "
                             "them with --example FILE")
    deadline = time.monotonic() + MAX_SECONDS
    tried, first_error, first_feeds = 0, "", ""
    for shapes, s, variant in itertools.islice(_candidates(plan), MAX_ATTEMPTS):
        if time.monotonic() > deadline:
            break
        feeds = plan.draw(shapes, s, variant, seed=0)
        tried += 1
        error = _attempt(run, feeds)
        if not error:
            how = "given" if plan.complete else f"candidate {tried}: {_how(feeds)}"
            return Found(feeds, how, [feeds, *_more(plan, run, shapes, s, variant)])
        if plan.complete:
            raise NoExampleError(f"the given example ({_how(feeds)}) does not run the model: "
                                 f"{error}")
        if not first_error:
            first_error, first_feeds = error, _how(feeds)
    raise NoExampleError(
        f"no example input runs the model ({tried} candidate(s) tried; the first, "
        f"{first_feeds}: {first_error}).\nPass a real one: {plan.advice()}")


def _candidates(plan: _Plan) -> Iterator[tuple[dict[str, tuple[int, ...]], int, str]]:
    """(shapes, scalar rung, integer variant): scalar values outermost (their lists are short
    and ordered by plausibility), then the ladder's rungs, each set of shapes once."""
    for s in range(plan.scalar_rungs):
        seen = []
        for k in range(plan.rungs):
            for lone_one in plan.modes:
                shapes = plan.shapes(k, lone_one)
                if shapes in seen or any(int(np.prod(d)) > MAX_ELEMENTS
                                         for d in shapes.values()):
                    continue
                seen.append(shapes)
                for variant in plan.variants:
                    yield shapes, s, variant


def _attempt(run: Run, feeds: Feeds) -> str:
    """"" when ``run(feeds)`` works with finite outputs, else why not (one line)."""
    try:
        outputs = run(feeds)
    except Exception as exc:  # onnxruntime's Fail / InvalidArgument / RuntimeException
        return _first_line(exc)
    bad = [name for name, value in outputs.items() if not _finite(value)]
    return f"non-finite values in output(s) {', '.join(bad)}" if bad else ""


def _first_line(exc: BaseException) -> str:
    """onnxruntime's message without its prefix and C++ source location, on one line."""
    text = " ".join(str(exc).split())
    return _ORT_NOISE.sub("", text)[:400] or type(exc).__name__


def _finite(value: object) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind != "f" or bool(np.isfinite(value).all())
    if isinstance(value, dict):
        return all(_finite(np.asarray(v)) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def _more(plan: _Plan, run: Run, shapes: dict[str, tuple[int, ...]], s: int,
          variant: str) -> list[Feeds]:
    random = variant == "small" or any(_kind(spec.dtype) == "f" and spec.name not in
                                       plan.given.arrays for spec in plan.inputs)
    if not random:  # every draw would be the example again
        return []
    elements = sum(int(np.prod(shape)) for shape in shapes.values())
    count = max(1, min(GATE_SAMPLES, GATE_ELEMENTS // max(1, elements)))
    draws = (plan.draw(shapes, s, variant, seed=seed) for seed in range(1, count))
    return [feeds for feeds in draws if not _attempt(run, feeds)]


def _how(feeds: Feeds) -> str:
    return ", ".join(f"{name}={array.item()!r}" if array.ndim == 0
                     else f"{name}={shape_text(array.shape)}" for name, array in feeds.items())


class _Plan:
    """Every input's axes resolved to fixed sizes or candidate lists, plus the value rules."""

    def __init__(self, inputs: tuple[TensorInfo, ...], given: Given,
                 axes: dict[str, list[_Axis]], scalars: dict[str, tuple[int, ...]]) -> None:
        self.inputs, self.given, self.axes, self.scalars = inputs, given, axes, scalars
        free = [a for axes_ in axes.values() for a in axes_]
        self.rungs = max((len(a.sizes) for a in free), default=1)
        self.scalar_rungs = max((len(v) for v in scalars.values()), default=1)
        ints = any(_kind(s.dtype) in "iub" and s.name not in given.arrays
                   and s.name not in scalars for s in inputs)
        self.variants = VARIANTS if ints else VARIANTS[:1]
        self.complete = all(s.name in given.arrays for s in inputs)
        self.modes = (False, True) if any(a.role == "lone" for a in free) else (False,)

    def shapes(self, k: int, lone_one: bool = False) -> dict[str, tuple[int, ...]]:
        """Rung ``k`` of every axis; ``lone_one``: lone axes (see ``_plan``) at 1 instead."""
        return {name: tuple(1 if lone_one and a.role == "lone"
                            else a.sizes[min(k, len(a.sizes) - 1)] for a in axes)
                for name, axes in self.axes.items()}

    def draw(self, shapes: dict[str, tuple[int, ...]], s: int, variant: str,
             seed: int) -> Feeds:
        rng = np.random.default_rng(seed)
        feeds: Feeds = {}
        for spec in self.inputs:
            if spec.name in self.given.arrays:
                feeds[spec.name] = self.given.arrays[spec.name]
                continue
            shape, kind = shapes[spec.name], _kind(spec.dtype)
            if spec.name in self.scalars:
                values = self.scalars[spec.name]
                feeds[spec.name] = np.full(shape, values[min(s, len(values) - 1)], spec.dtype)
            elif kind == "O":
                feeds[spec.name] = np.full(shape, "hello", dtype=object)
            elif kind == "f":
                feeds[spec.name] = (rng.random(shape) * 0.9 + 0.05).astype(spec.dtype)
            elif variant == "small":
                feeds[spec.name] = rng.integers(0, 2 if kind == "b" else 4, shape).astype(
                    spec.dtype)
            else:
                feeds[spec.name] = np.full(shape, variant == "ones", dtype=spec.dtype)
        return feeds

    def flags(self, *, batch: bool = True) -> tuple[list[str], list[str]]:
        """``--shape`` for each input with free dims (their labels where a size is missing;
        ``batch=False``: not for a free batch alone, whose 1 is rarely wrong), ``--dim`` for
        each free shared symbol; and the labels to replace."""
        shapes, dims, labels = [], [], []
        pinned = ("fixed",) if batch else ("fixed", "batch")
        for spec in self.inputs:
            axes = self.axes.get(spec.name, [])
            if spec.name in self.given.arrays or all(a.role in pinned for a in axes):
                continue
            shapes.append(f"--shape {spec.name}=" + "x".join(
                str(a.sizes[0]) if a.role in ("fixed", "batch") else a.label for a in axes))
            free = [a.label for a in axes if a.role not in ("fixed", "batch")]
            labels += free
            dims += [f"--dim {a.label}=N" for a in axes
                     if a.role not in ("fixed", "batch") and a.shared]
        return shapes + list(dict.fromkeys(dims)), list(dict.fromkeys(labels))

    def advice(self) -> str:
        """The flags that fix what the ladder could not find, as one sentence."""
        flags, labels = self.flags()
        text = " ".join(f for f in flags if f.startswith("--shape"))
        if labels:
            text += f" (replace {', '.join(labels)} by sizes the model accepts)"
        dims = [f for f in flags if f.startswith("--dim")]
        if dims:
            text += " or " + " ".join(dims)
        if self.scalars:
            values = ", ".join(f'"{n}": {v[0]}' for n, v in self.scalars.items())
            text += f"; scalar values in --example FILE.json, e.g. {{{values}}}"
        return (text + "; or --example FILE (.npz, .npy, .json)").lstrip("; ")


def suggest(model: onnx.ModelProto, inputs: tuple[TensorInfo, ...]) -> list[str]:
    """What ``inspect`` advises: the flags that pin the free dims of ``inputs``."""
    return _plan(model, inputs, Given()).flags(batch=False)[0]


def _kind(dtype: str) -> str:
    """numpy's kind letter; "?" for what no numpy dtype holds (bfloat16, sequences, maps)."""
    if dtype == "str":
        return "O"
    try:
        return np.dtype(dtype).kind
    except TypeError:
        return "?"


def _plan(model: onnx.ModelProto, inputs: tuple[TensorInfo, ...], given: Given) -> _Plan:
    hints = _weight_hints(model)
    sides = _metadata_sides(model)
    counts: dict[str, int] = {}
    for spec in inputs:
        for d in spec.shape:
            if isinstance(d, str):
                counts[d] = counts.get(d, 0) + 1
    for symbol in given.dims:
        if not is_shared(symbol) and counts.get(symbol, 0) > 1:
            raise ExampleArgumentError(f"--dim {symbol}: {counts[symbol]} axes carry this "
                                       "placeholder name and are not tied; use --shape")
    symbols: dict[str, _Axis] = {s: _Axis(s, (n,), "fixed") for s, n in given.dims.items()}
    axes: dict[str, list[_Axis]] = {}
    scalars: dict[str, tuple[int, ...]] = {}
    # sizes the user fixed, then those the weights fix, bind the symbols they carry
    for user in (True, False):
        for spec in inputs:
            fixed = given.shapes.get(spec.name) if user else None
            for axis, d in enumerate(spec.shape):
                n = fixed[axis] if fixed is not None else None if user else hints.get(
                    (spec.name, axis))
                if n is None or not (is_shared(d) or d in given.dims):
                    continue
                bound = symbols.setdefault(d, _Axis(d, (n,), "fixed"))
                if bound.sizes != (n,) and user:
                    raise ExampleArgumentError(f"dimension {d!r} is {bound.sizes[0]} elsewhere "
                                               f"but {n} in {spec.name}")
    images, numbers = 0, itertools.count(1)  # free axes' labels: unique across all inputs
    for spec in inputs:
        fixed = given.shapes.get(spec.name)
        resolved = []
        sides_seen = 0
        suffix = str(images) if images else ""  # H, W; then H1, W1 for a second image input
        for axis, d in enumerate(spec.shape):
            if fixed is not None:
                resolved.append(_Axis(str(fixed[axis]), (fixed[axis],), "fixed"))
                continue
            if isinstance(d, int) and d > 0:
                resolved.append(_Axis(str(d), (d,), "fixed"))
                continue
            if isinstance(d, str) and d in symbols:
                resolved.append(symbols[d])
                continue
            if (spec.name, axis) in hints:
                n = hints[spec.name, axis]
                resolved.append(_Axis(str(n), (n,), "fixed"))
                continue
            role = _role(d, axis, spec)
            sizes = LENGTHS if role == "length" else (1,)
            if role == "side":
                sizes = ((sides[sides_seen],) if sides_seen < len(sides) else ()) + SPATIAL
                sides_seen += 1
            if is_shared(d):  # its first axis: the others find it in ``symbols``
                symbols[d] = _Axis(d, sizes, role, shared=True)
                resolved.append(symbols[d])
            elif role == "side" and sides_seen <= 2:
                resolved.append(_Axis("HW"[sides_seen - 1] + suffix, sizes, role))
            else:  # a batch's label is never shown: its size, 1, is
                label = "batch" if role == "batch" else f"D{next(numbers)}"
                resolved.append(_Axis(label, sizes, role))
        free = [i for i, a in enumerate(resolved) if a.role != "fixed"]
        if len(resolved) >= 3 and len(free) == 1 and 0 < free[0] < len(resolved) - 1 \
                and resolved[free[0]].role == "length" and not resolved[free[0]].shared:
            # one anonymous axis between static ones, like an RNN state's [layers, ?, hidden]:
            # often a batch, so each rung also tries it at 1
            resolved[free[0]] = dataclasses.replace(resolved[free[0]], role="lone")
        images += sides_seen > 0
        axes[spec.name] = resolved
        if (spec.name not in given.arrays and _kind(spec.dtype) in "iu"
                and all(a.sizes == (1,) for a in resolved)):
            scalars[spec.name] = RATES if _RATE_NAMES.fullmatch(spec.name) else SCALARS
    return _Plan(inputs, given, axes, scalars)


def _role(dim: object, axis: int, spec: TensorInfo) -> str:
    name = dim if isinstance(dim, str) and is_shared(dim) else ""
    rank = len(spec.shape)
    if _BATCH_NAMES.fullmatch(name) or (axis == 0 and rank >= 2
                                        and not _LENGTH_NAMES.fullmatch(name)):
        return "batch"
    image = rank in (4, 5) and axis >= 1 and spec.dtype in ("float32", "float16", "uint8")
    if (name and _SIDE_NAMES.fullmatch(name)) or (not name and image):
        return "side"
    return "length"


def _weight_hints(model: onnx.ModelProto) -> dict[tuple[str, int], int]:
    """(input, axis) → size, from a node that reads a graph input with a constant weight."""
    weights = {init.name: tuple(init.dims) for init in model.graph.initializer}
    names = {i.name for i in model.graph.input} - set(weights)
    hints: dict[tuple[str, int], int] = {}
    for node in model.graph.node:
        if len(node.input) < 2 or node.input[0] not in names or node.input[1] not in weights:
            continue
        w = weights[node.input[1]]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Conv" and len(w) >= 3:
            hints[node.input[0], 1] = w[1] * int(attrs.get("group", 1))
        elif node.op_type == "ConvTranspose" and len(w) >= 3:
            hints[node.input[0], 1] = w[0]
        elif node.op_type == "MatMul" and len(w) == 2:
            hints[node.input[0], -1] = w[0]
        elif node.op_type == "Gemm" and len(w) == 2 and not attrs.get("transA", 0):
            hints[node.input[0], -1] = w[1] if attrs.get("transB", 0) else w[0]
    ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in model.graph.input}
    return {(name, axis % max(1, ranks[name])): size for (name, axis), size in hints.items()
            if ranks.get(name)}


def _metadata_sides(model: onnx.ModelProto) -> tuple[int, ...]:
    """Image height and width from metadata like Ultralytics' ``imgsz: [640, 640]``."""
    for prop in model.metadata_props:
        if prop.key in ("imgsz", "image_size", "input_size"):
            sizes = tuple(int(n) for n in re.findall(r"\d+", prop.value))
            if sizes:
                return sizes * 2 if len(sizes) == 1 else sizes[:2]
    return ()

