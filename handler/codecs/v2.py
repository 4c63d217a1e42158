"""Open Inference Protocol V2 (KServe / Triton) over HTTP: JSON tensors and the binary-tensor
extension (``Inference-Header-Content-Length``: a JSON header, then raw little-endian tensor
bytes in input order; BYTES elements as 4-byte little-endian length + bytes)."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from handler import tensors
from handler.codecs.simple import parse_json
from handler.errors import BadRequestError, InferenceError, InvalidInputError
from handler.http import JSON, OCTET, Request, Response
from handler.model import DATATYPES, Model

HEADER_LENGTH = "inference-header-content-length"


class Decoded(NamedTuple):
    feeds: dict[str, np.ndarray]
    id: str | None
    outputs: dict[str, bool]  # requested output → binary?  (empty: all outputs, JSON)
    binary_default: bool


def decode(request: Request, model: Model) -> Decoded:
    header, binary = _split(request)
    if not isinstance(header, dict) or not isinstance(header.get("inputs"), list):
        raise BadRequestError('expected {"inputs": [{"name", "shape", "datatype", "data"}, ...]}')
    parameters = _object(header.get("parameters"), "parameters")
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for item in header["inputs"]:
        name, array, used = _input(item, binary, offset, model)
        if name in arrays:
            raise InvalidInputError(f"input {name!r} given twice")
        arrays[name], offset = array, offset + used
    if offset != len(binary):
        raise BadRequestError(f"binary section has {len(binary) - offset} unclaimed bytes")
    wanted: dict[str, bool] = {}
    known = {spec.name for spec in model.outputs}
    for item in header.get("outputs") or ():
        out = _object(item, "outputs[]")
        name = out.get("name")
        if name not in known:
            raise InvalidInputError(f"unknown output {name!r}; the model has {sorted(known)}")
        wanted[name] = bool(_object(out.get("parameters"), "parameters").get("binary_data"))
    request_id = header.get("id")
    return Decoded(
        feeds=tensors.check(arrays, model.inputs),
        id=str(request_id) if request_id is not None else None,
        outputs=wanted,
        binary_default=bool(parameters.get("binary_data_output")),
    )


def encode(model: Model, outputs: dict[str, Any], decoded: Decoded) -> Response:
    wanted = decoded.outputs or dict.fromkeys(outputs, decoded.binary_default)
    specs = {spec.name: spec for spec in model.outputs}
    items, chunks = [], []
    for name, binary in wanted.items():
        value = outputs[name]
        if not isinstance(value, np.ndarray):
            raise InferenceError(f"output {name!r} is not a tensor (a sequence or map); "
                                 "use POST /predict for it")
        datatype = specs[name].datatype or _datatype_of(value)
        item: dict[str, Any] = {"name": name, "datatype": datatype, "shape": list(value.shape)}
        if binary:
            chunk = _to_bytes(value, datatype)
            item["parameters"] = {"binary_data_size": len(chunk)}
            chunks.append(chunk)
        else:
            item["data"] = tensors.to_json(value.reshape(-1))
        items.append(item)
    body: dict[str, Any] = {"model_name": model.name, "model_version": model.version,
                            "outputs": items}
    if decoded.id is not None:
        body["id"] = decoded.id
    if not chunks:
        return Response(200, payload=body)
    header = json.dumps(body, separators=(",", ":")).encode()
    return Response(200, body=b"".join([header, *chunks]),
                    headers={"content-type": OCTET, HEADER_LENGTH: str(len(header))})


def metadata(model: Model) -> dict[str, Any]:
    def describe(specs: Any) -> list[dict[str, Any]]:
        return [{"name": s.name, "datatype": s.datatype or "BYTES",
                 "shape": [d if isinstance(d, int) and d >= 0 else -1 for d in s.shape]}
                for s in specs]

    return {"name": model.name, "versions": [model.version], "platform": "onnxruntime_onnx",
            "inputs": describe(model.inputs), "outputs": describe(model.outputs)}


def _split(request: Request) -> tuple[Any, bytes]:
    length = request.headers.get(HEADER_LENGTH)
    if length is None:
        return parse_json(request), b""
    if not length.isdigit() or int(length) > len(request.body):
        raise BadRequestError(f"Inference-Header-Content-Length {length!r} does not fit a "
                              f"{len(request.body)}-byte body")
    cut = int(length)
    try:
        return json.loads(request.body[:cut]), request.body[cut:]
    except (ValueError, RecursionError) as exc:
        raise BadRequestError(f"malformed JSON inference header: {exc}") from None


def _input(item: Any, binary: bytes, offset: int, model: Model) -> tuple[str, np.ndarray, int]:
    item = _object(item, "inputs[]")
    name, datatype, shape = item.get("name"), item.get("datatype"), item.get("shape")
    if not isinstance(name, str):
        raise BadRequestError('each input needs a string "name"')
    spec = model.input_by_name.get(name)
    if spec is None:
        raise InvalidInputError(f"unknown input {name!r}; the model takes "
                                f"{', '.join(s.describe() for s in model.inputs)}")
    if datatype not in DATATYPES:
        raise InvalidInputError(f"input {name!r}: unknown datatype {datatype!r}; one of "
                                f"{', '.join(DATATYPES)}")
    if spec.datatype and datatype != spec.datatype:  # Triton refuses it too: no silent cast
        raise InvalidInputError(f"input {name!r}: expected datatype {spec.datatype}, got "
                                f"{datatype} ({spec.describe()})")
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise InvalidInputError(f"input {name!r}: shape must be a list of non-negative integers")
    count = math.prod(shape)
    size = _object(item.get("parameters"), "parameters").get("binary_data_size")
    if size is not None:
        if not isinstance(size, int) or size < 0 or offset + size > len(binary):
            raise BadRequestError(f"input {name!r}: binary_data_size {size!r} overruns the body")
        return name, _from_bytes(binary[offset:offset + size], datatype, count, name,
                                 shape), size
    if "data" not in item:
        raise InvalidInputError(f"input {name!r}: needs \"data\" or binary_data_size")
    # numpy's own dtype, checked by tensors.check: a value the label's dtype cannot hold
    # exactly (1.5 or 2**63 for INT64, "1.5" for FP32, 0/1 for BOOL) is refused, never cast
    flat = tensors.as_array(item["data"], spec).reshape(-1)
    if flat.size != count:
        raise InvalidInputError(f"input {name!r}: shape {shape} needs {count} values, "
                                f"got {flat.size}")
    return name, flat.reshape(shape), 0


def _from_bytes(chunk: bytes, datatype: str, count: int, name: str,
                shape: list[int]) -> np.ndarray:
    if datatype == "BYTES":
        values, pos = [], 0
        while pos < len(chunk):
            if pos + 4 > len(chunk):
                raise InvalidInputError(f"input {name!r}: truncated BYTES element")
            (length,) = struct.unpack_from("<I", chunk, pos)
            pos += 4
            if pos + length > len(chunk):
                raise InvalidInputError(f"input {name!r}: truncated BYTES element")
            values.append(chunk[pos:pos + length].decode("utf-8", "replace"))
            pos += length
        if len(values) != count:
            raise InvalidInputError(f"input {name!r}: shape {shape} needs {count} values, "
                                    f"got {len(values)}")
        return np.array(values, dtype=object).reshape(shape)
    dtype = DATATYPES[datatype].newbyteorder("<")
    if len(chunk) != count * dtype.itemsize:
        raise InvalidInputError(f"input {name!r}: shape {shape} of {datatype} needs "
                                f"{count * dtype.itemsize} bytes, got {len(chunk)}")
    return np.frombuffer(chunk, dtype=dtype).reshape(shape)


def _to_bytes(value: np.ndarray, datatype: str) -> bytes:
    if datatype == "BYTES":
        parts = []
        for element in value.reshape(-1):
            data = element if isinstance(element, bytes) else str(element).encode()
            parts += [struct.pack("<I", len(data)), data]
        return b"".join(parts)
    return np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()


def _datatype_of(value: np.ndarray) -> str:
    for datatype, dtype in DATATYPES.items():
        if dtype == value.dtype:
            return datatype
    return "BYTES"


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequestError(f'"{what}" must be an object')
    return value


__all__ = ["HEADER_LENGTH", "JSON", "Decoded", "decode", "encode", "metadata"]
