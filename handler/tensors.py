"""Request values → ``Tensor``s checked against the model's signature (dtype, rank, dims).

JSON nested lists are flattened and typed the way numpy would infer them (all bools → bool,
any float → float, ints → int, any string → string, anything else → mixed), then converted to
the input's element type only where no value changes. Every mismatch is an
``InvalidInputError`` whose message says what the model expects. No numpy: ``array`` packs.
"""

from __future__ import annotations

import array
import functools
import struct
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any, NamedTuple

from handler import strict_json
from handler.dims import is_shared
from handler.errors import InvalidInputError
from handler.model import TensorSpec
from handler.ort.tensor import Tensor, as_tensor

# element type → array typecode (bool and float16 are packed by bytes() / struct)
_TYPECODES = {"float32": "f", "float64": "d", "int8": "b", "uint8": "B", "int16": "h",
              "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q"}
_FLOAT16_MAX = 65504.0


class Values(NamedTuple):
    """JSON values flattened: their shape, the elements in C order, numpy's inferred kind
    (``b`` bool, ``i`` int, ``f`` float, ``U`` string, ``O`` mixed)."""

    shape: tuple[int, ...]
    flat: list[Any]
    kind: str

    @property
    def ndim(self) -> int:
        return len(self.shape)


def from_json(inputs: Any, specs: tuple[TensorSpec, ...]) -> dict[str, Tensor]:
    """``{"name": nested lists}``, or a bare nested list for a single-input model."""
    if isinstance(inputs, list):
        if len(specs) != 1:
            raise InvalidInputError(
                f"a bare list needs a single-input model; this one takes {_names(specs)}: "
                'send {"inputs": {"name": ...}}')
        return check({specs[0].name: values(inputs, specs[0])}, specs)
    if type(inputs) is not dict and not isinstance(inputs, Mapping):  # (an ABC check is slow)
        raise InvalidInputError('"inputs" must be an object {"name": nested list} or a list')
    arrays: dict[str, Values] = {}
    for name, value in inputs.items():
        for spec in specs:  # a handful of inputs: a scan beats building a dict per request
            if spec.name == name:
                break
        else:
            raise InvalidInputError(f"unknown input {name!r}; the model takes {_names(specs)}")
        arrays[name] = values(value, spec)
    return check(arrays, specs)


def values(value: Any, spec: TensorSpec) -> Values:
    """JSON nested lists → ``Values``; ragged nesting is an error."""
    shape: list[int] = []
    level = [value]
    while level and type(level[0]) is list:
        size = len(level[0])
        for item in level:
            if type(item) is not list or len(item) != size:
                raise _ragged(spec)
        shape.append(size)
        level = list(chain.from_iterable(level))
    types = frozenset(map(type, level))
    kind = _KINDS.get(types)
    if kind is None:
        if list in types:
            raise _ragged(spec)
        kind = _kind(types)
        if types <= _SCALARS:  # at most 32 such sets: remembered
            _KINDS[types] = kind
    return Values(tuple(shape), level, kind)


def _ragged(spec: TensorSpec) -> InvalidInputError:
    return InvalidInputError(f"input {spec.name!r}: not a rectangular array (ragged nested "
                             f"lists?); expected {spec.describe()}")


_SCALARS = frozenset((float, int, bool, str, bytes))
_KINDS: dict[frozenset[type], str] = {}  # the element types of a request's values → kind


def _kind(types: frozenset[type]) -> str:
    if types <= {float, int, bool}:
        if not types or types == {bool}:
            return "b" if types else "f"  # [] is float64 to numpy
        return "f" if float in types else "i"
    if types <= {str, bytes}:
        return "U"
    if types <= {str, bytes, float, int, bool}:
        return "s"  # numbers among strings: numpy makes them all strings
    return "O"


def check(arrays: Mapping[str, Any],
          specs: Iterable[TensorSpec]) -> dict[str, Tensor]:
    """Convert each value to its input's element type (only where no value changes) and
    check shapes."""
    specs = tuple(specs)
    for spec in specs:
        if spec.name not in arrays:
            missing = [s.name for s in specs if s.name not in arrays]
            raise InvalidInputError(f"missing input(s) {', '.join(map(repr, missing))}; the "
                                    f"model takes {_names(specs)}")
    feeds: dict[str, Tensor] = {}
    symbols: dict[str, tuple[int, str]] = {}
    for spec in specs:
        tensor = _coerce(arrays[spec.name], spec)
        _check_shape(tensor, spec, symbols)
        feeds[spec.name] = tensor
    if len(arrays) != len(feeds):  # every spec matched one value: any more are unknown
        unknown = set(arrays) - set(feeds)
        raise InvalidInputError(f"unknown input(s) {', '.join(map(repr, sorted(unknown)))}; "
                                f"the model takes {_names(specs)}")
    return feeds


def _coerce(value: Values | Tensor, spec: TensorSpec) -> Tensor:
    want = spec.element
    got = ""
    if type(value) is not Values:
        if not isinstance(value, Values | Tensor):  # a numpy array (a user pipeline's, a test's)
            value = as_tensor(value)
        if isinstance(value, Tensor):  # binary bodies (.npy, V2)
            if value.dtype == want:
                return value
            got = value.dtype  # converted as numpy's astype would, where no value changes
            value = Values(value.shape, value.flat(), _KIND_OF[value.dtype])
    shape, flat, kind = value
    if not flat:  # JSON's [] carries no type: any empty tensor fits
        return Tensor(want, shape, () if want == "string" else b"")
    if want == "string":
        if kind == "U":
            return Tensor(want, shape, tuple(
                v.decode("utf-8", "replace") if type(v) is bytes else v for v in flat))
        kind = "O" if kind == "s" else kind  # as an object array: mixed values
    elif want == "bool":
        if kind == "b":
            return Tensor(want, shape, bytes(flat))
    elif want.startswith("float"):
        if kind in "fi":
            return Tensor(want, shape, _pack_floats(want, flat, spec))
    elif want and kind in "fi":
        return Tensor(want, shape, _pack_integers(want, flat, kind, spec))
    names = {"U": "string", "s": "string", "O": "mixed values", "b": "bool", "f": "float64",
             "i": "int64"}
    raise InvalidInputError(f"input {spec.name!r}: expected {spec.describe()}, got "
                            f"{got or names[kind]}")


_KIND_OF = {"float32": "f", "float64": "f", "float16": "f", "bool": "b", "string": "U",
            **{name: "i" for name in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                      "uint32", "uint64")}}


def _pack_floats(want: str, flat: list[Any], spec: TensorSpec) -> bytes:
    try:
        if want == "float16":  # struct refuses what overflows half precision: numpy says inf
            flat = [v if abs(v) <= _FLOAT16_MAX else v * float("inf") for v in flat]
            return struct.pack(f"<{len(flat)}e", *flat)
        return array.array(_TYPECODES[want], flat).tobytes()
    except OverflowError:  # an integer beyond any float (10**400)
        raise InvalidInputError(f"input {spec.name!r}: a number is out of range for "
                                f"{want} ({spec.describe()})") from None


def _pack_integers(want: str, flat: list[Any], kind: str, spec: TensorSpec) -> bytes:
    """Only where no value changes: 3.0 → 3 is fine, 3.5 or an out-of-range value is not."""
    if kind == "f":
        if not all(type(v) is not float or v.is_integer() for v in flat):
            raise _out_of_range(want, spec)
        flat = [int(v) for v in flat]
    try:
        return array.array(_TYPECODES[want], flat).tobytes()
    except (OverflowError, TypeError):
        raise _out_of_range(want, spec) from None


def _out_of_range(want: str, spec: TensorSpec) -> InvalidInputError:
    return InvalidInputError(f"input {spec.name!r}: expected integers in range for {want} "
                             f"({spec.describe()})")


def _check_shape(tensor: Tensor, spec: TensorSpec,
                 symbols: dict[str, tuple[int, str]]) -> None:
    if len(tensor.shape) != len(spec.shape):
        raise InvalidInputError(f"input {spec.name!r}: expected rank {len(spec.shape)} "
                                f"({spec.describe()}), got shape {list(tensor.shape)}")
    for axis, want in enumerate(spec.shape):
        dim = tensor.shape[axis]
        if want.__class__ is int:
            if dim != want and want >= 0:
                raise InvalidInputError(f"input {spec.name!r}: expected {spec.describe()}, got "
                                        f"shape {list(tensor.shape)} (axis {axis} must be "
                                        f"{want})")
        elif _is_shared(want):  # a shared symbolic name: equal wherever it appears
            seen = symbols.setdefault(want, (dim, spec.name))
            if seen[0] != dim:
                raise InvalidInputError(
                    f"inputs {seen[1]!r} and {spec.name!r} disagree on dimension {want!r} "
                    f"({seen[0]} vs {dim})")


# the model's few dim names, asked on every request: the answer remembered (a regex match)
_is_shared = functools.lru_cache(maxsize=256)(is_shared)


def to_json(value: Any) -> Any:
    """An output (tensor, or a sequence/map from a non-tensor output) → JSON-ready values."""
    if isinstance(value, Tensor):
        return value.encoded_json()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)  # a numpy array or scalar from a user pipeline
    return to_json(tolist()) if tolist is not None else value


def outputs_to_json(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """``{"outputs": {name: value}}``; its text written here when every output carries one."""
    return strict_json.encoded_object({"outputs": strict_json.encoded_object(
        {name: to_json(value) for name, value in outputs.items()})})


def _names(specs: Iterable[TensorSpec]) -> str:
    return ", ".join(spec.describe() for spec in specs)
