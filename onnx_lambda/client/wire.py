"""Request and response bodies: Open Inference Protocol V2 (JSON tensors, or the binary-tensor
extension: a JSON header of ``Inference-Header-Content-Length`` bytes, then raw little-endian
tensor bytes in order) and single ``.npy`` tensors."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

HEADER_LENGTH = "inference-header-content-length"
NPY = "application/x-npy"
OCTET = "application/octet-stream"
JSON = "application/json"

DATATYPES = {"BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32",
             "UINT64": "uint64", "INT8": "int8", "INT16": "int16", "INT32": "int32",
             "INT64": "int64", "FP16": "float16", "FP32": "float32", "FP64": "float64"}
_BY_DTYPE = {np.dtype(v): k for k, v in DATATYPES.items()}


def datatype_of(array: np.ndarray) -> str:
    if array.dtype.kind in "OUS":
        return "BYTES"
    try:
        return _BY_DTYPE[array.dtype]
    except KeyError:
        raise TypeError(f"no V2 datatype for numpy {array.dtype}") from None


def v2_request(inputs: Mapping[str, Any], *, binary: bool, outputs: list[str] | None = None,
               binary_outputs: bool | None = None) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one ``/v2/models/{name}/infer`` request: binary or JSON input
    tensors, and the answer asked for as binary tensors too (``binary_outputs``, default
    ``binary``) or as JSON."""
    binary_outputs = binary if binary_outputs is None else binary_outputs
    items, chunks = [], []
    for name, value in inputs.items():
        array = np.asarray(value)
        item: dict[str, Any] = {"name": name, "shape": list(array.shape),
                                "datatype": datatype_of(array)}
        if binary:
            chunk = _to_bytes(array, item["datatype"])
            item["parameters"] = {"binary_data_size": len(chunk)}
            chunks.append(chunk)
        else:
            flat = array.reshape(-1)
            item["data"] = ([v.decode() if isinstance(v, bytes) else str(v) for v in flat]
                            if item["datatype"] == "BYTES" else flat.tolist())
        items.append(item)
    header: dict[str, Any] = {"inputs": items}
    if outputs is not None:
        header["outputs"] = [{"name": n, "parameters": {"binary_data": binary_outputs}}
                             for n in outputs]
    if binary_outputs:
        header["parameters"] = {"binary_data_output": True}
    text = json.dumps(header, separators=(",", ":")).encode()
    if not binary:
        return text, {"content-type": JSON}
    return b"".join([text, *chunks]), {"content-type": OCTET, HEADER_LENGTH: str(len(text))}


def v2_response(body: bytes, headers: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Output name → array, from a JSON or binary V2 answer."""
    length = headers.get(HEADER_LENGTH)
    cut = int(length) if length is not None else len(body)
    doc = json.loads(body[:cut])
    binary, offset, result = memoryview(body)[cut:], 0, {}
    for item in doc["outputs"]:
        datatype, shape = item["datatype"], item["shape"]
        size = (item.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            raw = binary[offset:offset + size]
            offset += size
            result[item["name"]] = _from_bytes(raw, datatype, shape)
        else:
            dtype = object if datatype == "BYTES" else DATATYPES[datatype]
            result[item["name"]] = np.array(item["data"], dtype=dtype).reshape(shape)
    return result


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def npy_array(body: bytes) -> np.ndarray:
    return np.load(io.BytesIO(body), allow_pickle=False)


def _to_bytes(array: np.ndarray, datatype: str) -> bytes:
    if datatype != "BYTES":
        return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    parts = []
    for value in array.reshape(-1):
        raw = value if isinstance(value, bytes) else str(value).encode()
        parts += [len(raw).to_bytes(4, "little"), raw]
    return b"".join(parts)


def _from_bytes(raw: memoryview, datatype: str, shape: list[int]) -> np.ndarray:
    if datatype != "BYTES":
        dtype = np.dtype(DATATYPES[datatype]).newbyteorder("<")
        return np.frombuffer(raw, dtype=dtype).reshape(shape)
    values, at, data = [], 0, bytes(raw)
    while at < len(data):
        n = int.from_bytes(data[at:at + 4], "little")
        values.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return np.array(values, dtype=object).reshape(shape)
