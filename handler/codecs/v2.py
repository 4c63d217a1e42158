"""Open Inference Protocol V2 (KServe / Triton) over HTTP: JSON tensors and the binary-tensor
extension (``Inference-Header-Content-Length``: a JSON header, then raw little-endian tensor
bytes in input order; BYTES elements as 4-byte little-endian length + bytes)."""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping

from handler import json_codec, tensors
from handler.codecs.shapes import MAX_DIM, MAX_RANK, is_shape
from handler.codecs.simple import loads, parse_json
from handler.errors import BadRequestError, InferenceError, InvalidInputError
from handler.http import OCTET, Request, Response
from handler.model import DATATYPES, Model
from handler.ort.tensor import DTYPES, Tensor
from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HEADER_LENGTH = "inference-header-content-length"


class Decoded(NamedTuple):
    feeds: dict[str, Tensor]
    id: str | None
    outputs: dict[str, bool]  # requested output → binary?  (empty: all outputs, JSON)
    binary_default: bool


def decode(request: Request, model: Model) -> Decoded:
    header, binary = _split(request)
    if not isinstance(header, dict) or not isinstance(header.get("inputs"), list):
        raise BadRequestError('expected {"inputs": [{"name", "shape", "datatype", "data"}, ...]}')
    parameters = _object(header.get("parameters"), "parameters")
    arrays: dict[str, Tensor | tensors.Values] = {}
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
    for item in _typed(header.get("outputs"), list, "outputs") or ():
        out = _object(item, "outputs[]")
        name = _typed(out.get("name"), str, "outputs[].name")
        if name not in known:
            raise InvalidInputError(f"unknown output {name!r}; the model has {sorted(known)}")
        as_binary = _object(out.get("parameters"), "parameters").get("binary_data")
        wanted[name] = bool(_typed(as_binary, bool, "parameters.binary_data"))
    return Decoded(
        feeds=tensors.check(arrays, model.inputs),
        id=_typed(header.get("id"), str, "id"),
        outputs=wanted,
        binary_default=bool(_typed(parameters.get("binary_data_output"), bool,
                                   "parameters.binary_data_output")),
    )


def encode(model: Model, outputs: dict[str, Any], decoded: Decoded) -> Response:
    wanted = decoded.outputs or dict.fromkeys(outputs, decoded.binary_default)
    specs = {spec.name: spec for spec in model.outputs}
    items, chunks = [], []
    for name, binary in wanted.items():
        value = outputs[name]
        if not isinstance(value, Tensor):
            raise InferenceError(f"output {name!r} is not a tensor (a sequence or map); "
                                 "use POST /predict for it")
        datatype = specs[name].datatype or _DATATYPE_OF[value.dtype]
        item: dict[str, Any] = {"name": name, "datatype": datatype, "shape": list(value.shape)}
        if binary:
            chunk = _to_bytes(value, datatype)
            item["parameters"] = {"binary_data_size": len(chunk)}
            chunks.append(chunk)
        else:
            item["data"] = json_codec.tensor_values(value.reshape((value.size,)))
        items.append(item)
    body: dict[str, Any] = {"model_name": model.name, "model_version": model.version,
                            "outputs": items}
    if decoded.id is not None:
        body["id"] = decoded.id
    if not chunks:
        return Response(200, payload=body)
    text, _, non_finite = json_codec.dumps(body)  # JSON outputs beside binary ones
    header = text.encode()
    response = Response(200, body=b"".join([header, *chunks]),
                        headers={"content-type": OCTET, HEADER_LENGTH: str(len(header))})
    response.non_finite = non_finite
    return response


def metadata(model: Model) -> dict[str, Any]:
    def describe(specs: Any) -> list[dict[str, Any]]:
        return [{"name": s.name, "datatype": s.datatype or "BYTES",
                 "shape": [d if isinstance(d, int) and d >= 0 else -1 for d in s.shape]}
                for s in specs]

    return {"name": model.name, "versions": [model.version], "platform": "onnxruntime_onnx",
            "inputs": describe(model.inputs), "outputs": describe(model.outputs)}


def _split(request: Request) -> tuple[Any, bytes | memoryview]:
    length = request.headers.get(HEADER_LENGTH)
    if length is None:
        return parse_json(request), b""
    # ASCII digits only: str.isdigit() accepts "²", which int() refuses; 20 digits bound int()
    if not (length.isascii() and length.isdigit() and len(length) <= 20
            and int(length) <= len(request.body)):
        raise BadRequestError(f"Inference-Header-Content-Length {length[:40]!r} does not fit "
                              f"a {len(request.body)}-byte body")
    cut = int(length)  # the tensors stay views of the body: no copy on the way to ORT
    return loads(request.body[:cut], "JSON inference header"), memoryview(request.body)[cut:]


def _input(item: Any, binary: bytes | memoryview, offset: int,
           model: Model) -> tuple[str, Tensor | tensors.Values, int]:
    item = _object(item, "inputs[]")
    name, datatype, shape = item.get("name"), item.get("datatype"), item.get("shape")
    if not isinstance(name, str):
        raise BadRequestError('each input needs a string "name"')
    spec = model.input_by_name.get(name)
    if spec is None:
        raise InvalidInputError(f"unknown input {name!r}; the model takes "
                                f"{', '.join(s.describe() for s in model.inputs)}")
    if not isinstance(datatype, str) or datatype not in DATATYPES:
        raise InvalidInputError(f"input {name!r}: unknown datatype {datatype!r}; one of "
                                f"{', '.join(DATATYPES)}")
    if spec.datatype and datatype != spec.datatype:  # Triton refuses it too: no silent cast
        raise InvalidInputError(f"input {name!r}: expected datatype {spec.datatype}, got "
                                f"{datatype} ({spec.describe()})")
    if not is_shape(shape):
        raise InvalidInputError(f"input {name!r}: shape must be a list of at most {MAX_RANK} "
                                f"integers in 0..{MAX_DIM}")
    count = math.prod(shape)
    size = _object(item.get("parameters"), "parameters").get("binary_data_size")
    if size is not None:
        if type(size) is not int or size < 0 or offset + size > len(binary):
            raise BadRequestError(f"input {name!r}: binary_data_size {size!r} overruns the body")
        return name, _from_bytes(binary[offset:offset + size], datatype, count, name,
                                 shape), size
    if "data" not in item:
        raise InvalidInputError(f"input {name!r}: needs \"data\" or binary_data_size")
    # typed like numpy would and checked by tensors.check: a value the label's dtype cannot hold
    # exactly (1.5 or 2**63 for INT64, "1.5" for FP32, 0/1 for BOOL) is refused, never cast
    flat = tensors.values(item["data"], spec)
    if len(flat.flat) != count:
        raise InvalidInputError(f"input {name!r}: shape {shape} needs {count} values, "
                                f"got {len(flat.flat)}")
    return name, flat._replace(shape=tuple(shape)), 0


def _from_bytes(chunk: bytes | memoryview, datatype: str, count: int, name: str,
                shape: list[int]) -> Tensor:
    if datatype == "BYTES":
        values, pos = [], 0
        while pos < len(chunk):
            if pos + 4 > len(chunk):
                raise InvalidInputError(f"input {name!r}: truncated BYTES element")
            (length,) = struct.unpack_from("<I", chunk, pos)
            pos += 4
            if pos + length > len(chunk):
                raise InvalidInputError(f"input {name!r}: truncated BYTES element")
            values.append(bytes(chunk[pos:pos + length]).decode("utf-8", "replace"))
            pos += length
        if len(values) != count:
            raise InvalidInputError(f"input {name!r}: shape {shape} needs {count} values, "
                                    f"got {len(values)}")
        return Tensor("string", tuple(shape), tuple(values))
    dtype = DATATYPES[datatype]
    itemsize = DTYPES[dtype][2]
    if len(chunk) != count * itemsize:
        raise InvalidInputError(f"input {name!r}: shape {shape} of {datatype} needs "
                                f"{count * itemsize} bytes, got {len(chunk)}")
    return Tensor(dtype, tuple(shape), chunk)  # little-endian, as the extension sends it


def _to_bytes(value: Tensor, datatype: str) -> bytes:
    if datatype == "BYTES":
        parts = []
        for element in value.data:
            data = element.encode()
            parts += [struct.pack("<I", len(data)), data]
        return b"".join(parts)
    return bytes(value.data)


_DATATYPE_OF = {dtype: datatype for datatype, dtype in DATATYPES.items()}


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequestError(f'"{what}" must be an object')
    return value


def _typed(value: Any, kind: type, what: str) -> Any:
    """``value`` when it is absent or of ``kind``, else a 400 that says what was expected."""
    if value is None or isinstance(value, kind):
        return value
    raise BadRequestError(f'"{what}" must be {_KINDS[kind]}, got {type(value).__name__} '
                          f"{str(value)[:40]!r}")


_KINDS = {list: "a list", str: "a string", bool: "true or false"}


__all__ = ["HEADER_LENGTH", "Decoded", "decode", "encode", "metadata"]
