"""A small immutable tensor without numpy: element type name, shape, and a flat buffer.

Numeric data is a bytes-like object in C order and the machine's byte order (little-endian on
every Lambda architecture); string tensors hold a tuple of ``str``. Inputs go into ONNX Runtime
without a copy (``handler.ort.capi`` pins the buffer); outputs are copied once out of ORT's
memory into ``bytes``. ``numpy()`` gives a zero-copy view for code that wants numpy (a user
pipeline); nothing else here imports it.
"""

from __future__ import annotations

import math
import struct

from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DTYPES", "Tensor", "as_tensor", "from_values", "nest", "zeros"]

# dtype name (numpy's spelling) → (ONNX element type, struct format, item size)
DTYPES: dict[str, tuple[int, str, int]] = {
    "float32": (1, "f", 4),
    "uint8": (2, "B", 1),
    "int8": (3, "b", 1),
    "uint16": (4, "H", 2),
    "int16": (5, "h", 2),
    "int32": (6, "i", 4),
    "int64": (7, "q", 8),
    "string": (8, "", 0),
    "bool": (9, "?", 1),
    "float16": (10, "e", 2),
    "float64": (11, "d", 8),
    "uint32": (12, "I", 4),
    "uint64": (13, "Q", 8),
}
BY_ELEMENT_TYPE: dict[int, str] = {code: name for name, (code, _, _) in DTYPES.items()}
# Below this many values ``tolist`` unpacks and nests in Python; from it on, one memoryview
# cast builds the nest in C (its fixed cost is three casts)
_FEW = 24
# numpy's names for the same types, where they differ (for arrays a user pipeline hands us)
_NUMPY_ALIASES = {"bool_": "bool", "object": "string", "str": "string"}


class Tensor(NamedTuple):
    dtype: str  # a key of DTYPES
    shape: tuple[int, ...]
    data: Any  # bytes-like (numeric) or tuple[str, ...] (string)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][2]

    def flat(self) -> list[Any]:
        """The elements in C order as Python values (bool, int, float, str)."""
        layout = _LAYOUTS.get((self.dtype, self.shape)) or _layout(self.dtype, self.shape)
        if layout is not None:
            return list(layout.unpack(self.data))
        if self.dtype == "string":
            return list(self.data)
        fmt: Any = DTYPES[self.dtype][1]  # a scalar or an empty tensor (Any: a cast's format)
        if fmt == "e":  # memoryview has no half-precision cast; struct has
            return list(struct.unpack(f"<{self.size}e", self.data))
        data = self.data
        view = memoryview(data) if data.__class__ is bytes else memoryview(data).cast("B")
        values: list[Any] = view.cast(fmt).tolist()
        return values

    def tolist(self) -> Any:
        """Nested lists like ``numpy.ndarray.tolist`` (a scalar for rank 0)."""
        layout = _LAYOUTS.get((self.dtype, self.shape)) or _layout(self.dtype, self.shape)
        if layout is not None and layout.few:
            flat = list(layout.unpack(self.data))
            return nest(flat, self.shape) if layout.nested else flat
        if self.dtype not in ("string", "float16") and 0 not in self.shape and self.shape:
            # one C-level call builds the whole nest
            fmt: Any = DTYPES[self.dtype][1]  # (Any: a cast's format)
            return memoryview(self.data).cast("B").cast(fmt, self.shape).tolist()
        return nest(self.flat(), self.shape)

    def numpy(self) -> Any:
        """A numpy view of the same memory (read-only when the buffer is ``bytes``)."""
        import numpy  # only for callers that ask: numpy stays off the handler's cold path

        if self.dtype == "string":
            return numpy.array(self.data, dtype=object).reshape(self.shape)
        return numpy.frombuffer(self.data, dtype=self.dtype).reshape(self.shape)

    def reshape(self, shape: tuple[int, ...]) -> Tensor:
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape {list(self.shape)} to {list(shape)}")
        return Tensor(self.dtype, tuple(shape), self.data)


def nest(flat: list[Any], shape: tuple[int, ...]) -> Any:
    """A flat C-order list → nested lists of ``shape``."""
    if len(shape) == 2 and shape[0] == 1:  # one row (a batch of one, the usual request)
        return [flat]
    if not shape:
        return flat[0]
    if 0 in shape:
        return _empty(shape)
    for dim in shape[:0:-1]:  # the inner dimensions, innermost first
        # a single row needs no slicing
        flat = [flat] if len(flat) == dim else [flat[i:i + dim] for i in range(0, len(flat), dim)]
    return flat


class _Layout:
    """How a numeric tensor of one element type and shape is read, worked out once: one
    ``struct`` call reads its values (a memoryview cast costs three), a rank-1 array is its own
    nest."""

    __slots__ = ("few", "nested", "unpack")

    def __init__(self, dtype: str, shape: tuple[int, ...]) -> None:
        count = math.prod(shape)
        self.unpack = struct.Struct(f"<{count}{DTYPES[dtype][1]}").unpack
        self.nested = len(shape) > 1
        self.few = count < _FEW


def _layout(dtype: str, shape: tuple[int, ...]) -> _Layout | None:
    """A new layout (remembered while there are few); None for strings, scalars and empty
    tensors, which take the plain paths."""
    if dtype == "string" or not shape or 0 in shape:
        return None
    layout = _Layout(dtype, shape)
    if len(_LAYOUTS) < 64:  # a client's own batch and sequence sizes: bounded
        _LAYOUTS[dtype, shape] = layout
    return layout


_LAYOUTS: dict[tuple[str, tuple[int, ...]], _Layout] = {}


def _empty(shape: tuple[int, ...]) -> list[Any]:
    if len(shape) == 1:
        return []
    return [_empty(shape[1:]) for _ in range(shape[0])]


def from_values(dtype: str, shape: tuple[int, ...], values: list[Any]) -> Tensor:
    """Flat Python values → a tensor (struct packs and range-checks the numbers)."""
    if dtype == "string":
        return Tensor(dtype, shape, tuple(values))
    return Tensor(dtype, shape, struct.pack(f"<{len(values)}{DTYPES[dtype][1]}", *values))


def zeros(dtype: str, shape: tuple[int, ...]) -> Tensor:
    size = math.prod(shape)
    if dtype == "string":
        return Tensor(dtype, shape, ("",) * size)
    return Tensor(dtype, shape, bytes(size * DTYPES[dtype][2]))


def as_tensor(value: Any) -> Tensor:
    """A ``Tensor``, or a numpy array (from a user pipeline) viewed without a copy where it is
    already C-contiguous."""
    if isinstance(value, Tensor):
        return value
    dtype = getattr(value, "dtype", None)
    if dtype is None or not hasattr(value, "__array_interface__"):
        raise TypeError(f"expected a Tensor or a numpy array, got {type(value).__name__}")
    name = _NUMPY_ALIASES.get(dtype.name, dtype.name)
    if dtype.kind in "OUS":
        return Tensor("string", tuple(value.shape), tuple(
            v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
            for v in value.reshape(-1).tolist()))
    if name not in DTYPES:
        raise TypeError(f"unsupported element type {dtype.name}")
    if not value.flags.c_contiguous or dtype.byteorder == ">":
        value = value.astype(dtype.newbyteorder("="), order="C")
    return Tensor(name, tuple(value.shape), value.reshape(-1).view("uint8").data)
