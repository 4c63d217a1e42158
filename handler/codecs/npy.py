"""Raw NumPy ``.npy`` bodies (``application/x-npy``): one tensor in, one tensor out.

The request array feeds a single-input model; the response is the output named by the
``output`` query parameter, else the first output. ``allow_pickle`` stays off: a ``.npy``
body is data, never code.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np

from handler import tensors
from handler.errors import BadRequestError, InferenceError, InvalidInputError
from handler.http import NPY, Request, Response
from handler.model import Model


def decode(request: Request, model: Model) -> dict[str, np.ndarray]:
    if len(model.inputs) != 1:
        raise InvalidInputError(f"an .npy body feeds single-input models; this one takes "
                                f"{len(model.inputs)} inputs: use JSON or /v2")
    try:
        array = np.load(io.BytesIO(request.body), allow_pickle=False)
    except (ValueError, OSError, EOFError, TypeError) as exc:
        raise BadRequestError(f"not a valid .npy body: {exc}") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise BadRequestError("expected a single .npy array, got an .npz archive")
    return tensors.check({model.inputs[0].name: array}, model.inputs)


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
