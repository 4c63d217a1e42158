"""Request values → ``Tensor``s checked against the model's signature (dtype, rank, dims).

JSON nested lists are flattened and typed the way numpy would infer them (all bools → bool,
any float → float, ints → int, any string → string, anything else → mixed), then converted to
the input's element type only where no value changes. Every mismatch is an
``InvalidInputError`` whose message says what the model expects. No numpy: ``array`` packs.
"""

from __future__ import annotations

import array
import struct
from collections.abc import Iterable, Mapping
from itertools import chain
from operator import itemgetter

from handler import json_codec
from handler.dims import is_shared
from handler.errors import InvalidInputError
from handler.model import TensorSpec
from handler.ort.tensor import Tensor, as_tensor
from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# element type → array typecode (bool and float16 are packed by bytes() / struct)
_TYPECODES = {"float32": "f", "float64": "d", "int8": "b", "uint8": "B", "int16": "h",
              "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q"}
_FLOAT16_MAX = 65504.0
# A NamedTuple's own ``__new__`` is Python-level; this is its C half (what ``_make`` calls),
# for the values and tensors every request makes
_new = tuple.__new__


class Values(NamedTuple):
    """JSON values flattened: their shape, the elements in C order, numpy's inferred kind
    (``b`` bool, ``i`` int, ``f`` float, ``U`` string, ``O`` mixed)."""

    shape: tuple[int, ...]
    flat: list[Any]
    kind: str

    @property
    def ndim(self) -> int:
        return len(self.shape)


class _Input:
    """One model input's checks, worked out once per signature (``_plan``): the element type
    its values convert to and the axes a request's shape must match (fixed sizes, and names
    that tie two or more axes of the signature, in axis order); anonymous axes, and a name on
    one axis only, need no look at all."""

    __slots__ = ("axes", "name", "pick", "rank", "sizes", "spec", "typecode", "want")
    axes: tuple[tuple[int, Any, bool], ...]  # the middle one an int or a str, as ``named`` says

    def __init__(self, spec: TensorSpec, tied: frozenset[str]) -> None:
        self.spec, self.name, self.want, self.rank = spec, spec.name, spec.element, len(spec.shape)
        self.typecode = _TYPECODES.get(self.want, "")  # numbers ``array`` packs as they are
        # (axis, size, False) for a fixed size, (axis, name, True) for a tying symbolic name
        self.axes = tuple((axis, dim, dim.__class__ is not int)
                          for axis, dim in enumerate(spec.shape)
                          if (dim >= 0 if dim.__class__ is int else dim in tied))
        # fixed sizes only: one C-level comparison of the axes they hold (``_check_shape``)
        fixed = [axis for axis, _, named in self.axes if not named]
        self.pick = self.sizes = None
        if fixed and len(fixed) == len(self.axes):
            self.pick = itemgetter(*fixed)
            self.sizes = self.pick(spec.shape)


def _tied(specs: Iterable[TensorSpec]) -> frozenset[str]:
    """The shared names (``handler.dims``) on two or more axes of a signature."""
    names = [dim for spec in specs for dim in spec.shape
             if dim.__class__ is not int and is_shared(dim)]
    return frozenset(name for name in names if names.count(name) > 1)


_PLANS: dict[int, tuple[tuple[TensorSpec, ...], tuple[_Input, ...]]] = {}


def _plan(specs: Iterable[TensorSpec]) -> tuple[_Input, ...]:
    """A signature's ``_Input``s, worked out once for each model's ``inputs`` tuple (held, so
    that its id stays its own)."""
    held = _PLANS.get(id(specs))
    if held is not None and held[0] is specs:
        return held[1]
    listed = tuple(specs)
    tied = _tied(listed)
    plan = tuple(_Input(spec, tied) for spec in listed)
    if specs.__class__ is tuple and len(_PLANS) < 16:
        _PLANS[id(specs)] = (specs, plan)
    return plan


def from_json(inputs: Any, specs: tuple[TensorSpec, ...]) -> dict[str, Tensor]:
    """``{"name": nested lists}``, or a bare nested list for a single-input model."""
    plan = _plan(specs)
    if isinstance(inputs, list):
        if len(plan) != 1:
            raise InvalidInputError(
                f"a bare list needs a single-input model; this one takes {_names(specs)}: "
                'send {"inputs": {"name": ...}}')
        (only,) = plan  # one input: none missing, none unknown
        tensor = _coerce(_json_value(inputs, only), only)
        _check_shape(tensor, only, {})
        return {only.name: tensor}
    if type(inputs) is not dict and not isinstance(inputs, Mapping):  # (an ABC check is slow)
        raise InvalidInputError('"inputs" must be an object {"name": nested list} or a list')
    arrays: dict[str, Values | Tensor] = {}
    for name, value in inputs.items():
        for item in plan:  # a handful of inputs: a scan beats building a dict per request
            if item.name == name:
                break
        else:
            raise InvalidInputError(f"unknown input {name!r}; the model takes {_names(specs)}")
        arrays[name] = _json_value(value, item)
    return _checked(arrays, plan)


def _json_value(value: Any, item: _Input) -> Values | Tensor:
    """JSON nested lists → a ``Tensor`` of the input's type where they are plain numbers for a
    numeric input (packed at once: ``array`` refuses anything else), else ``Values`` for
    ``_coerce`` to convert or refuse. Raises only for ragged nesting, as ``values`` does."""
    shape, flat = _nested(value, item.spec)
    typecode = item.typecode
    if typecode and flat and flat[0].__class__ is not bool:  # (all bools: not a number)
        try:
            return _new(Tensor, (item.want, shape, array.array(typecode, flat).tobytes()))
        except (TypeError, OverflowError):  # a string, a float for an integer type, a range:
            pass  # ``_coerce`` converts it as numpy would, or says why not
    return _new(Values, (shape, flat, _kind_of(flat, item.spec)))


def values(value: Any, spec: TensorSpec) -> Values:
    """JSON nested lists → ``Values``; ragged nesting is an error."""
    shape, flat = _nested(value, spec)
    return _new(Values, (shape, flat, _kind_of(flat, spec)))


def _nested(value: Any, spec: TensorSpec) -> tuple[tuple[int, ...], list[Any]]:
    """JSON nested lists → (shape, the elements in C order); ragged nesting is an error."""
    if type(value) is not list:  # a scalar
        return (), [value]
    # A batch of one row of scalars (the usual request): what the loop below finds, without
    # it (tests/unit/test_tensors.py checks both agree)
    if len(value) == 1 and type(row := value[0]) is list and (not row or type(row[0]) is not list):
        return (1, len(row)), row
    return _nested_levels(value, spec)


def _nested_levels(value: list[Any], spec: TensorSpec) -> tuple[tuple[int, ...], list[Any]]:
    """``_nested`` for any list, level by level."""
    shape = [len(value)]
    level = value  # the outermost list is its own only row: no copy
    while level and type(level[0]) is list:
        size = len(level[0])
        for row in level:
            if type(row) is not list or len(row) != size:
                raise _ragged(spec)
        shape.append(size)
        # a single row is the next level as it is (a batch of one, the usual request)
        level = level[0] if len(level) == 1 else list(chain.from_iterable(level))
    return tuple(shape), level


def _kind_of(flat: list[Any], spec: TensorSpec) -> str:
    types = frozenset(map(type, flat))
    kind = _KINDS.get(types)
    if kind is None:
        if list in types:
            raise _ragged(spec)
        kind = _kind(types)
        if types <= _SCALARS:  # at most 32 such sets: remembered
            _KINDS[types] = kind
    return kind


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
    return _checked(arrays, _plan(specs))


def _checked(arrays: Mapping[str, Any], plan: tuple[_Input, ...]) -> dict[str, Tensor]:
    for item in plan:
        if item.name not in arrays:
            missing = [i.name for i in plan if i.name not in arrays]
            raise InvalidInputError(f"missing input(s) {', '.join(map(repr, missing))}; the "
                                    f"model takes {_names(i.spec for i in plan)}")
    feeds: dict[str, Tensor] = {}
    symbols: dict[str, tuple[int, str]] = {}
    for item in plan:
        tensor = arrays[item.name]
        if tensor.__class__ is not Tensor or tensor.dtype != item.want:  # (packed already)
            tensor = _coerce(tensor, item)
        _check_shape(tensor, item, symbols)
        feeds[item.name] = tensor
    if len(arrays) != len(feeds):  # every spec matched one value: any more are unknown
        unknown = set(arrays) - set(feeds)
        raise InvalidInputError(f"unknown input(s) {', '.join(map(repr, sorted(unknown)))}; "
                                f"the model takes {_names(i.spec for i in plan)}")
    return feeds


def _coerce(value: Values | Tensor, item: _Input) -> Tensor:
    want, spec = item.want, item.spec
    got = ""
    if value.__class__ is not Values:
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
        if kind == "f" or kind == "i":
            return _new(Tensor, (want, shape, _pack_floats(want, flat, spec)))
    elif want and (kind == "f" or kind == "i"):
        return _new(Tensor, (want, shape, _pack_integers(want, flat, kind, spec)))
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


def _check_shape(tensor: Tensor, item: _Input, symbols: dict[str, tuple[int, str]]) -> None:
    shape = tensor.shape
    if len(shape) != item.rank:
        spec = item.spec
        raise InvalidInputError(f"input {spec.name!r}: expected rank {len(spec.shape)} "
                                f"({spec.describe()}), got shape {list(shape)}")
    if item.pick is not None and item.pick(shape) == item.sizes:
        return  # fixed sizes only, all as the model says (else the loop says which is not)
    for axis, want, named in item.axes:
        dim = shape[axis]
        if not named:
            if dim != want:
                raise InvalidInputError(f"input {item.name!r}: expected {item.spec.describe()}, "
                                        f"got shape {list(shape)} (axis {axis} must be {want})")
        else:  # a shared symbolic name: equal wherever it appears
            seen = symbols.setdefault(want, (dim, item.name))
            if seen[0] != dim:
                raise InvalidInputError(
                    f"inputs {seen[1]!r} and {item.name!r} disagree on dimension {want!r} "
                    f"({seen[0]} vs {dim})")


def to_json(value: Any) -> Any:
    """An output (tensor, or a sequence/map from a non-tensor output) → JSON-ready values."""
    if isinstance(value, Tensor):
        return json_codec.tensor_values(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)  # a numpy array or scalar from a user pipeline
    return to_json(tolist()) if tolist is not None else value


def outputs_to_json(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """``{"outputs": {name: value}}``, each output as ``to_json`` writes it."""
    return {"outputs": {name: to_json(value) for name, value in outputs.items()}}


def _names(specs: Iterable[TensorSpec]) -> str:
    return ", ".join(spec.describe() for spec in specs)
