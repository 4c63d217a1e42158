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

from handler.ort import float_json, float_text
from handler.ort.float_text import EncodedList, shortest
from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DTYPES", "EncodedList", "Tensor", "as_tensor", "from_values", "nest", "shortest",
           "zeros"]

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
        fmt = DTYPES[self.dtype][1]  # a scalar or an empty tensor
        if fmt == "e":  # memoryview has no half-precision cast; struct has
            return list(struct.unpack(f"<{self.size}e", self.data))
        data = self.data
        view = memoryview(data) if data.__class__ is bytes else memoryview(data).cast("B")
        return view.cast(fmt).tolist()

    def tolist(self) -> Any:
        """Nested lists like ``numpy.ndarray.tolist`` (a scalar for rank 0)."""
        layout = _LAYOUTS.get((self.dtype, self.shape)) or _layout(self.dtype, self.shape)
        if layout is not None and layout.few:
            flat = list(layout.unpack(self.data))
            return nest(flat, self.shape) if layout.nested else flat
        if self.dtype not in ("string", "float16") and 0 not in self.shape and self.shape:
            # one C-level call builds the whole nest
            return memoryview(self.data).cast("B").cast(DTYPES[self.dtype][1],
                                                        self.shape).tolist()
        return nest(self.flat(), self.shape)

    def json(self) -> Any:
        """``tolist`` for a JSON body: float32/float16 values as the floats of their shortest
        decimal that reads back as the same float32/float16 (not float64's 17 digits), so that
        any encoder writes that decimal. NaN and ±inf stay floats (the response encoder writes
        them as null, and counts them)."""
        if not float_text.supports(self.dtype):
            return self.tolist()
        layout = _LAYOUTS.get((self.dtype, self.shape)) or _layout(self.dtype, self.shape)
        if layout is None:  # a scalar or an empty tensor
            return nest(shortest(self.flat(), self.dtype), self.shape)
        flat = list(layout.unpack(self.data))
        if layout.c and math.isfinite(sum(flat)):  # as encoded_json decides
            return list(float_json.encoded(nest(flat, self.shape)))  # a caller may change it
        return nest(shortest(flat, self.dtype), self.shape)

    def encoded_json(self) -> Any:
        """``json()``, with an array as an ``EncodedList``: it carries its JSON text, which
        ``strict_json.dumps`` writes instead of formatting every float again (``repr`` of a
        float costs more than finding its shortest float32 text). For the handler's own codecs
        and pipelines, which never change it (the text would not follow)."""
        layout = _LAYOUTS.get((self.dtype, self.shape)) or _layout(self.dtype, self.shape)
        few = self._float_texts(layout)
        if few is not None:
            texts, floats, non_finite, template = few
            value = EncodedList(floats)
            value.text, value.non_finite = (template % tuple(texts)).decode(), non_finite
            return value
        if layout is None or layout.texts is None:  # a scalar, an empty or no float tensor
            return self.json()
        values = layout.unpack(self.data)
        # all finite: their float64 sum cannot overflow, and NaN/±inf carry through it
        if layout.c and math.isfinite(sum(values)):
            return float_json.encoded(nest(list(values), self.shape))
        texts, floats, non_finite = layout.texts(values, self.dtype)
        value = EncodedList(nest(floats, self.shape) if layout.nested else floats)
        value.text, value.non_finite = _nested_joins(texts, self.shape).decode(), non_finite
        return value

    def float_texts(self) -> tuple[list[bytes], list[Any], int, bytes] | None:
        """A float32/float16 tensor of fewer than ``float_text.SMALL`` values, the usual small
        answer, as ``encoded_json`` writes it: each value's shortest text (``b"null"`` where
        not finite), the floats those texts read as nested like ``tolist``, how many are not
        finite, and the shape's bytes template with a ``%s`` per value; None for any other
        tensor. (``tensors.outputs_to_json`` fills one template with a whole answer's texts.)"""
        return self._float_texts(_LAYOUTS.get((self.dtype, self.shape))
                                 or _layout(self.dtype, self.shape))

    def _float_texts(self, layout: _Layout | None
                     ) -> tuple[list[bytes], list[Any], int, bytes] | None:
        """``float_texts`` with this tensor's layout looked up already (``encoded_json``)."""
        if layout is None or layout.template is None:
            return None
        texts, floats, non_finite = layout.texts(layout.unpack(self.data), self.dtype)
        # (nest's answer for a batch of one row, without it)
        return (texts, [floats] if layout.one_row else nest(floats, self.shape)
                if layout.nested else floats, non_finite, layout.template)

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
    nest; for a float tensor, how ``encoded_json`` writes it: a few values by one ``%`` on the
    shape's text with a ``%s`` per value (a template's ``%`` over thousands of values costs
    twice the joins, and its text as much memory), more by joins."""

    __slots__ = ("c", "few", "nested", "one_row", "template", "texts", "unpack")

    def __init__(self, dtype: str, shape: tuple[int, ...]) -> None:
        count = math.prod(shape)
        self.unpack = struct.Struct(f"<{count}{DTYPES[dtype][1]}").unpack
        self.nested = len(shape) > 1
        self.one_row = len(shape) == 2 and shape[0] == 1  # a batch of one
        self.few = count < float_text.SMALL
        self.texts: Any = None  # float_text's writer for this many values; None: no float type
        self.template = None
        # float_json writes a float32 array of SMALL values or more when all are finite
        self.c = dtype == "float32" and not self.few
        if float_text.supports(dtype):
            self.texts = float_text.one_by_one if self.few else float_text.texts
            if self.few:
                self.template = _nested_joins([b"%s"] * count, shape)


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


def _nested_joins(texts: list[bytes], shape: tuple[int, ...]) -> bytes:
    for dim in reversed(shape):
        texts = [b"[" + b",".join(texts[i:i + dim]) + b"]" for i in range(0, len(texts), dim)]
    return texts[0]


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
