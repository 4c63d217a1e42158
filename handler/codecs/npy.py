"""Raw NumPy ``.npy`` bodies (``application/x-npy``): one tensor in, one tensor out.

The request array feeds a single-input model; the response is the output named by the
``output`` query parameter, else the first output. The header is parsed here, strictly (format
1.0 or 2.0; exactly the keys ``descr``, ``fortran_order``, ``shape``; plain numeric dtypes: no
object arrays, no pickle), and its shape must account for every byte after it before anything
is sized from it. The data then feeds the model without a copy (C order, little-endian).
"""

from __future__ import annotations

import array
import math
import re
import struct
from collections.abc import Mapping

from handler import tensors
from handler.codecs.shapes import is_shape
from handler.errors import BadRequestError, InferenceError, InvalidInputError
from handler.http import NPY, Request, Response
from handler.model import Model
from handler.ort.tensor import DTYPES, Tensor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"\x93NUMPY"
# descr kind + size → element type name
_DESCRS = {"f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16",
           "i4": "int32", "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32",
           "u8": "uint64", "b1": "bool"}
_CODES = {name: code for code, name in _DESCRS.items()}  # element type → descr kind + size
# One header entry. Compiled at the first .npy body (re's cache keeps it), not at import: the
# compile is ~1.5 M instructions of every cold start, most of which never see an .npy body.
_ENTRY = (r"""\s*(['"])(descr|fortran_order|shape)\1\s*:\s*"""
          r"""('[^']*'|"[^"]*"|True|False|\(\s*(?:\d+\s*,\s*)*(?:\d+\s*)?\))\s*""")
# byte swapping is type-agnostic: any code of the width (Any: a memoryview cast's format)
_SWAP: dict[int, Any] = {2: "H", 4: "I", 8: "Q"}
_LENGTH_FORMATS = {b"\x01\x00": "<H", b"\x02\x00": "<I"}  # the header length's field


def decode(request: Request, model: Model) -> dict[str, Tensor]:
    if len(model.inputs) != 1:
        raise InvalidInputError(f"an .npy body feeds single-input models; this one takes "
                                f"{len(model.inputs)} inputs: use JSON or /v2")
    return tensors.check({model.inputs[0].name: parse(request.body)}, model.inputs)


def parse(body: bytes) -> Tensor:
    """An ``.npy`` body → a ``Tensor`` viewing its data (copied only to reorder: big-endian or
    Fortran-order bodies)."""
    if not body.startswith(MAGIC):
        if body.startswith(b"PK"):
            raise BadRequestError("expected a single .npy array, got an .npz archive")
        raise BadRequestError("not a valid .npy body: no \\x93NUMPY magic")
    version = body[6:8]
    if version not in _LENGTH_FORMATS:
        raise BadRequestError(f"not a valid .npy body: format version {version!r} (send 1.0 "
                              "or 2.0)")
    fmt = _LENGTH_FORMATS[version]
    start = 8 + struct.calcsize(fmt)
    length = struct.unpack_from(fmt, body, 8)[0] if len(body) >= start else len(body)
    if start + length > len(body):
        raise BadRequestError("not a valid .npy body: truncated header")
    descr, fortran, shape = _header(body[start:start + length].decode("latin1"))
    dtype, itemsize = _dtype(descr)
    data = memoryview(body)[start + length:]
    if not is_shape(shape) or math.prod(shape) * itemsize != len(data):
        raise BadRequestError(f".npy header declares shape {list(shape)} of {descr} but "
                              f"{len(data)} bytes of data follow")
    if dtype == "string":  # fixed-width text (U: UTF-32, S: bytes), NUL-padded
        if fortran and len(shape) > 1:
            raise BadRequestError("a Fortran-order .npy of strings is not supported")
        encoding = "utf-32-be" if descr[0] == ">" else "utf-32-le"
        items = [bytes(data[i:i + itemsize]) for i in range(0, len(data), itemsize)]
        text = ([b.decode(encoding, "replace").rstrip("\0") for b in items] if "U" in descr
                else [b.rstrip(b"\0").decode("utf-8", "replace") for b in items])
        return Tensor("string", shape, tuple(text))
    if descr[0] == ">" and itemsize > 1:
        swapped = array.array(_SWAP[itemsize])
        swapped.frombytes(data)
        swapped.byteswap()
        data = memoryview(swapped.tobytes())
    if fortran and len(shape) > 1:
        data = memoryview(b"".join(_c_order(data.cast(_SWAP.get(itemsize, "B")), shape)))
    return Tensor(dtype, shape, data)


def _header(text: str) -> tuple[str, bool, tuple[int, ...]]:
    """numpy's header: a Python dict literal, matched entry by entry (never evaluated)."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise BadRequestError("not a valid .npy body: the header is not a {...} dict")
    body, entries, pos, entry = body[1:-1], {}, 0, re.compile(_ENTRY)
    while pos < len(body) and body[pos:].strip():
        match = entry.match(body, pos)
        if match is None or match.group(2) in entries:
            raise BadRequestError("not a valid .npy body: the header must hold exactly "
                                  "'descr', 'fortran_order' and 'shape'")
        entries[match.group(2)] = match.group(3)
        pos = match.end()
        if body.startswith(",", pos):
            pos += 1
        elif body[pos:].strip():
            raise BadRequestError("not a valid .npy body: malformed header")
    if len(entries) != 3:
        raise BadRequestError("not a valid .npy body: the header must hold exactly 'descr', "
                              "'fortran_order' and 'shape'")
    descr, fortran = entries["descr"][1:-1], entries["fortran_order"]
    if fortran not in ("True", "False") or descr[:1] in ("'", '"'):
        raise BadRequestError("not a valid .npy body: malformed header")
    dims = entries["shape"][1:-1].replace(",", " ").split()
    return descr, fortran == "True", tuple(int(d) for d in dims)


def _dtype(descr: str) -> tuple[str, int]:
    """descr → (element type, item size)."""
    order, code = (descr[0], descr[1:]) if descr[:1] in "<>|=" else ("=", descr)
    if "O" in code:
        raise BadRequestError(".npy object arrays are refused: a body is data, never code")
    if code[:1] in ("U", "S") and code[1:].isdigit() and 0 < int(code[1:]) < 2**20:
        return "string", int(code[1:]) * (4 if code[0] == "U" else 1)
    name = _DESCRS.get(code)
    if name is None or (order == "|" and code[-1] not in "1"):
        raise BadRequestError(f".npy dtype {descr!r} is not supported: send a numeric, bool "
                              "or string array")
    return name, DTYPES[name][2]


def load_npz(path: str) -> dict[str, Tensor]:
    """An ``.npz`` archive (a zip of ``.npy`` files, e.g. a manifest's ``example_file``) → one
    tensor per member, parsed as strictly as request bodies."""
    import zipfile  # only for artifacts with an example file: off every other cold path

    with zipfile.ZipFile(path) as archive:
        return {name.removesuffix(".npy"): parse(archive.read(name))
                for name in archive.namelist()}


def _c_order(items: memoryview, shape: tuple[int, ...]) -> list[bytes]:
    """Fortran-order items → C-order chunks: element (i0, rest) sits at i0 + shape[0] * F(rest),
    so the sub-array for each i0 is the strided slice items[i0::shape[0]], in Fortran order."""
    if len(shape) == 1:
        return [items.tobytes()]
    return [chunk for i in range(shape[0]) for chunk in _c_order(items[i::shape[0]], shape[1:])]


def encode(outputs: Mapping[str, Any], query: Mapping[str, str]) -> Response:
    name = query.get("output") or next(iter(outputs))
    if name not in outputs:
        raise InvalidInputError(f"unknown output {name!r}; the model has {list(outputs)}")
    value = outputs[name]
    if not isinstance(value, Tensor) or value.dtype == "string":
        raise InferenceError(f"output {name!r} cannot be sent as .npy; ask for JSON")
    return Response(200, body=header(value) + bytes(value.data),
                    headers={"content-type": NPY})


def header(tensor: Tensor) -> bytes:
    """A format 1.0 header as ``numpy.save`` writes it (padded to 64 bytes)."""
    code = _CODES[tensor.dtype]
    descr = ("|" if code.endswith("1") else "<") + code
    dims = ", ".join(map(str, tensor.shape)) + ("," if len(tensor.shape) == 1 else "")
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    text += " " * (-(len(text) + 11) % 64) + "\n"
    return MAGIC + b"\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")
