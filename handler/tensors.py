"""Request values → numpy arrays checked against the model's signature (dtype, rank, dims).

Every mismatch is an ``InvalidInputError`` whose message says what the model expects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from handler.dims import is_shared
from handler.errors import InvalidInputError
from handler.model import TensorSpec


def from_json(inputs: Any, specs: tuple[TensorSpec, ...]) -> dict[str, np.ndarray]:
    """``{"name": nested lists}``, or a bare nested list for a single-input model."""
    if isinstance(inputs, list):
        if len(specs) != 1:
            raise InvalidInputError(
                f"a bare list needs a single-input model; this one takes {_names(specs)}: "
                'send {"inputs": {"name": ...}}')
        return check({specs[0].name: as_array(inputs, specs[0])}, specs)
    if not isinstance(inputs, Mapping):
        raise InvalidInputError('"inputs" must be an object {"name": nested list} or a list')
    by_name = {s.name: s for s in specs}
    arrays: dict[str, np.ndarray] = {}
    for name, value in inputs.items():
        spec = by_name.get(name)
        if spec is None:
            raise InvalidInputError(f"unknown input {name!r}; the model takes {_names(specs)}")
        arrays[name] = as_array(value, spec)
    return check(arrays, specs)


def as_array(value: Any, spec: TensorSpec) -> np.ndarray:
    """JSON nested lists → an array of numpy's inferred dtype (checked by ``_coerce``)."""
    try:
        array = np.asarray(value, dtype=object if spec.datatype == "BYTES" else None)
    except (ValueError, TypeError):
        raise InvalidInputError(f"input {spec.name!r}: not a rectangular array (ragged nested "
                                f"lists?); expected {spec.describe()}") from None
    if array.dtype.kind in "fO" and spec.dtype.kind in "iu":
        return _exact_integers(value, array, spec)
    return array


def _exact_integers(value: Any, inferred: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """numpy infers float64 (or object) for integers beyond int64, e.g. [2**63 + 1, 0]: the
    float loses digits. All-integer JSON for an integer input converts exactly instead."""
    exact = np.asarray(value, dtype=object)
    if exact.shape != inferred.shape or not all(type(v) is int for v in exact.flat):
        return inferred  # real floats (or bools): the usual checks decide
    try:
        return exact.astype(spec.dtype)
    except OverflowError:
        raise InvalidInputError(f"input {spec.name!r}: expected integers in range for "
                                f"{spec.dtype.name} ({spec.describe()})") from None


def check(arrays: Mapping[str, np.ndarray], specs: Iterable[TensorSpec]) -> dict[str, np.ndarray]:
    """Coerce each array to its input's dtype (only where no value changes) and check shapes."""
    specs = tuple(specs)
    missing = [s.name for s in specs if s.name not in arrays]
    if missing:
        raise InvalidInputError(f"missing input(s) {', '.join(map(repr, missing))}; the model "
                                f"takes {_names(specs)}")
    feeds: dict[str, np.ndarray] = {}
    symbols: dict[str, tuple[int, str]] = {}
    for spec in specs:
        array = _coerce(arrays[spec.name], spec)
        _check_shape(array, spec, symbols)
        feeds[spec.name] = array
    if len(arrays) != len(feeds):  # every spec matched one array: any more are unknown
        unknown = set(arrays) - set(feeds)
        raise InvalidInputError(f"unknown input(s) {', '.join(map(repr, sorted(unknown)))}; "
                                f"the model takes {_names(specs)}")
    return feeds


def _coerce(array: np.ndarray, spec: TensorSpec) -> np.ndarray:
    kind, want = array.dtype.kind, spec.dtype
    if kind == "f" and want.kind == "f":  # JSON numbers for a float input: the hot path
        return array.astype(want, copy=False)
    if array.dtype == want and kind != "O":  # already exact (int64 JSON, binary tensors)
        return array
    if array.size == 0:  # JSON's [] carries no dtype: any empty array fits
        return array.astype(want, copy=False)
    if spec.datatype == "BYTES":
        if kind in "USO" and (kind != "O" or all(isinstance(v, str | bytes) for v in array.flat)):
            return array.astype(object, copy=False)
    elif want.kind == "b":
        if kind == "b":
            return array
    elif want.kind == "f":
        if kind in "iu":
            return array.astype(want, copy=False)
    elif want.kind in "iu" and kind in "iuf":
        # Only where no value changes: 3.0 → 3 is fine, 3.5 or an out-of-range value is not.
        with np.errstate(invalid="ignore"):
            converted = array.astype(want, copy=False)
            if np.array_equal(converted, array):
                return converted
        raise InvalidInputError(f"input {spec.name!r}: expected integers in range for "
                                f"{want.name} ({spec.describe()})")
    names = {"U": "string", "S": "bytes", "O": "mixed values", "b": "bool"}
    got = names.get(kind, array.dtype.name)
    raise InvalidInputError(f"input {spec.name!r}: expected {spec.describe()}, got {got}")


def _check_shape(array: np.ndarray, spec: TensorSpec,
                 symbols: dict[str, tuple[int, str]]) -> None:
    if array.ndim != len(spec.shape):
        raise InvalidInputError(f"input {spec.name!r}: expected rank {len(spec.shape)} "
                                f"({spec.describe()}), got shape {list(array.shape)}")
    for axis, want in enumerate(spec.shape):
        dim = array.shape[axis]
        if want.__class__ is int:
            if dim != want and want >= 0:
                raise InvalidInputError(f"input {spec.name!r}: expected {spec.describe()}, got "
                                        f"shape {list(array.shape)} (axis {axis} must be {want})")
        elif is_shared(want):  # a shared symbolic name: equal wherever it appears
            seen = symbols.setdefault(want, (dim, spec.name))
            if seen[0] != dim:
                raise InvalidInputError(
                    f"inputs {seen[1]!r} and {spec.name!r} disagree on dimension {want!r} "
                    f"({seen[0]} vs {dim})")


def to_json(value: Any) -> Any:
    """An output (tensor, or a sequence/map from a non-tensor output) → JSON-ready values."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SO":
            return [to_json(v) for v in value.tolist()] if value.ndim else to_json(value.item())
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def outputs_to_json(outputs: Mapping[str, Any]) -> dict[str, Any]:
    return {"outputs": {name: to_json(value) for name, value in outputs.items()}}


def _names(specs: Iterable[TensorSpec]) -> str:
    return ", ".join(spec.describe() for spec in specs)
