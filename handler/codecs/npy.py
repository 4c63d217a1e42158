"""Raw NumPy ``.npy`` bodies (``application/x-npy``): one tensor in, one tensor out.

The request array feeds a single-input model; the response is the output named by the
``output`` query parameter, else the first output. ``allow_pickle`` stays off: a ``.npy``
body is data, never code.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from handler import tensors
from handler.codecs.shapes import is_shape
from handler.errors import BadRequestError, InferenceError, InvalidInputError
from handler.http import NPY, Request, Response
from handler.model import Model


def decode(request: Request, model: Model) -> dict[str, np.ndarray]:
    if len(model.inputs) != 1:
        raise InvalidInputError(f"an .npy body feeds single-input models; this one takes "
                                f"{len(model.inputs)} inputs: use JSON or /v2")
    return tensors.check({model.inputs[0].name: _array(request.body)}, model.inputs)


def _array(body: bytes) -> np.ndarray:
    """The body's array, viewed in place. The header's shape must account for every byte after
    it, checked before anything is allocated (``np.load`` allocates the declared size first:
    a 100-byte body declaring a terabyte was a MemoryError)."""
    stream = io.BytesIO(body)
    try:
        version = npy_format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"format version {version[0]}.{version[1]} (send 1.0 or 2.0)")
    except Exception as exc:  # numpy's header parser raises ValueError, SyntaxError, tokenize's
        # TokenError, ... for hostile text: every one of them means a bad body
        if body.startswith(b"PK"):
            raise BadRequestError("expected a single .npy array, got an .npz archive") from None
        raise BadRequestError(f"not a valid .npy body: {exc}") from None
    if dtype.hasobject:
        raise BadRequestError(".npy object arrays are refused: a body is data, never code")
    data = memoryview(body)[stream.tell():]
    if not is_shape(shape) or math.prod(shape) * dtype.itemsize != len(data):
        raise BadRequestError(f".npy header declares shape {list(shape)} of {dtype} but "
                              f"{len(data)} bytes of data follow")
    try:
        return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    except ValueError as exc:  # beyond numpy's limits (rank > 64, itemsize 0, ...)
        raise BadRequestError(f"not a valid .npy body: {exc}") from None


def encode(outputs: Mapping[str, Any], query: Mapping[str, str]) -> Response:
    name = query.get("output") or next(iter(outputs))
    if name not in outputs:
        raise InvalidInputError(f"unknown output {name!r}; the model has {list(outputs)}")
    value = outputs[name]
    if not isinstance(value, np.ndarray) or value.dtype.kind == "O":
        raise InferenceError(f"output {name!r} cannot be sent as .npy; ask for JSON")
    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=False)
    return Response(200, body=buffer.getvalue(), headers={"content-type": NPY})
