"""The build's example input: what the user gave (``--example FILE``, ``--shape``, ``--dim``),
checked against the model's inputs, and how it is written into the artifact.

The example is data the model really ran on. It is the accuracy gate's first sample, the input
the build measures with, the runtime's warm-up and the request ``scripts/run`` prints. Small, it
is inline in ``model.json`` (``example``: the ``inputs`` of a ``/predict`` request); large, or for
a pipeline whose request is not tensors, it is ``example.npz`` beside the model
(``example_file``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from handler.json_codec import shortest
from handler.manifest import TensorInfo
from handler.ort.tensor import nest
from onnx_lambda.build_model.errors import ExampleArgumentError

Feeds = dict[str, np.ndarray]
EXAMPLE_FILE = "example.npz"
INLINE_MAX_ELEMENTS = 1024  # beyond this the example is a file: model.json stays readable
TENSOR_REQUEST_PIPELINES = ("tensor", "classifier")  # whose /predict inputs are the tensors


@dataclass(frozen=True)
class Given:
    """What the command line fixes: whole inputs, input shapes, symbolic dim sizes."""

    arrays: Feeds = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.arrays or self.shapes or self.dims)


def parse(example: Path | None, shapes: list[str], dims: list[str]) -> Given:
    """The three flags' raw values → ``Given`` (checked against the model later)."""
    return Given(_read(example) if example is not None else {},
                 dict(_shape(raw) for raw in shapes), dict(_dim(raw) for raw in dims))


def _read(path: Path) -> dict[str, Any]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        if suffix == ".npy":
            return {"": np.load(path, allow_pickle=False)}  # "": the single input
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and set(data) == {"inputs"}:
                data = data["inputs"]  # a /predict request body works too
            if not isinstance(data, dict):
                raise ExampleArgumentError(f'--example {path}: expected {{"input name": '
                                           "nested list, …}")
            return data
    except (OSError, ValueError) as exc:  # a missing file, bad JSON, a pickled .npy
        raise ExampleArgumentError(f"--example {path}: cannot read it ({exc})") from exc
    raise ExampleArgumentError(f"--example {path}: expected a .npz, .npy or .json file")


def _shape(raw: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = raw.rpartition("=")
    try:
        if not sep or not name:
            raise ValueError
        shape = tuple(int(d) for d in dims.replace(",", "x").split("x")) if dims else ()
        if any(d < 0 for d in shape):
            raise ValueError
    except ValueError:
        raise ExampleArgumentError(f"--shape {raw!r}: expected NAME=1x3x224x224 (sizes, "
                                   "'x' between them; NAME= for a scalar)") from None
    return name, shape


def _dim(raw: str) -> tuple[str, int]:
    name, sep, size = raw.rpartition("=")
    if not sep or not name or not size.isdigit():
        raise ExampleArgumentError(f"--dim {raw!r}: expected SYMBOL=N, e.g. batch=1")
    return name, int(size)


def check(given: Given, inputs: tuple[TensorInfo, ...]) -> Given:
    """Resolve names (a ``.npy``'s single input), coerce arrays to the inputs' dtypes, and
    refuse what cannot fit: unknown names, wrong ranks, static dims that differ."""
    by_name = {spec.name: spec for spec in inputs}
    raw = dict(given.arrays)
    if "" in raw:
        if len(inputs) != 1:
            raise ExampleArgumentError(f"--example: a .npy feeds a single-input model; this one "
                                       f"takes {', '.join(by_name)}: use .npz or .json")
        raw = {inputs[0].name: raw.pop("")}
    for flag, names in (("--example", raw), ("--shape", given.shapes)):
        unknown = sorted(set(names) - set(by_name))
        if unknown:
            raise ExampleArgumentError(f"{flag}: unknown input(s) {', '.join(unknown)}; the "
                                       f"model takes {', '.join(by_name)}")
    arrays = {name: _coerce(name, value, by_name[name]) for name, value in raw.items()}
    shapes = dict(given.shapes)
    for name, array in arrays.items():
        shapes.setdefault(name, array.shape)
        if shapes[name] != array.shape:
            raise ExampleArgumentError(f"--shape {name}={shape_text(shapes[name])} disagrees with "
                                       f"--example's {name} of shape {shape_text(array.shape)}")
    for name, shape in shapes.items():
        declared = by_name[name].shape
        if len(shape) != len(declared) or any(isinstance(d, int) and d > 0 and d != s
                                               for d, s in zip(declared, shape, strict=True)):
            raise ExampleArgumentError(f"input {name}: shape {shape_text(shape)} does not fit the "
                                       f"model's {shape_text(declared)}")
    symbols = {d for spec in inputs for d in spec.shape if isinstance(d, str)}
    unknown_dims = sorted(set(given.dims) - symbols)
    if unknown_dims:
        named = ", ".join(sorted(symbols)) or "none"
        raise ExampleArgumentError(f"--dim: no input axis is named {', '.join(unknown_dims)} "
                                   f"(symbolic dims of this model: {named})")
    return Given(arrays, shapes, dict(given.dims))


def _coerce(name: str, value: Any, spec: TensorInfo) -> np.ndarray:
    """Cast to the input's dtype where no value changes (float → float may round)."""
    try:
        array = np.asarray(value, dtype=object if spec.dtype == "str" else None)
    except ValueError:
        raise ExampleArgumentError(f"--example: input {name}: not a rectangular array") from None
    if spec.dtype == "str":
        return array
    try:
        target = np.dtype(spec.dtype)
        cast = array.astype(target)
    except (TypeError, ValueError):
        raise ExampleArgumentError(f"--example: input {name}: {array.dtype} values for a "
                                   f"{spec.dtype} input") from None
    if target.kind != "f" and not np.array_equal(cast, array):
        raise ExampleArgumentError(f"--example: input {name}: {array.dtype} values do not fit "
                                   f"{target} exactly")
    return cast


def shape_text(shape: tuple[Any, ...]) -> str:
    """``1x3x224x224``; a scalar is ``(scalar)``."""
    return "x".join("?" if d is None else str(d) for d in shape) or "(scalar)"


def describe(feeds: Feeds) -> str:
    return ", ".join(f"{name}: {array.dtype}[{shape_text(array.shape)}]"
                     + (f" = {array.item()!r}" if array.ndim == 0 else "")
                     for name, array in feeds.items())


def write(feeds: Feeds, pipeline: str, folder: Path) -> tuple[Any, str | None]:
    """Store the example for the runtime: ``(inline example, None)`` when small and the
    pipeline takes tensors, else ``(None, EXAMPLE_FILE)`` with the file written to ``folder``."""
    elements = sum(int(a.size) for a in feeds.values())
    if pipeline in TENSOR_REQUEST_PIPELINES and elements <= INLINE_MAX_ELEMENTS:
        return {name: _json(array) for name, array in feeds.items()}, None
    strings = [name for name, array in feeds.items() if array.dtype == object]
    # .npz holds no object arrays without pickle: strings become fixed-width unicode
    arrays = {name: array.astype(str) if name in strings else array
              for name, array in feeds.items()}
    np.savez(folder / EXAMPLE_FILE, allow_pickle=False, **arrays)
    return None, EXAMPLE_FILE


def _json(array: np.ndarray) -> Any:
    if array.dtype == object:
        return array.astype(str).tolist()
    if array.dtype.name in ("float32", "float16"):
        # the shortest decimal (0.12345679, not 0.12345679104328156), as the runtime writes its
        # outputs: the same float once cast back, and a readable model.json / curl
        return nest(shortest(array.ravel().tolist(), array.dtype.name), array.shape)
    return array.tolist()
