"""Float32 outputs as JSON: bytes and encode time of the ways to write them, on a real output.

    python -m benchmarks.json_floats [--model models/minilm] [--batch 8] [--repeat 40]

The model's example, repeated ``--batch`` times (a text example made distinct sentences by a
number each), runs once through the handler's session; each float32 output tensor is then
written as a JSON body six ways, interleaved, and each way's text is checked to read back as
the same float32 values:
- float64 repr: ``json.dumps`` of ``tolist()``, the widened values (the standard library's
  answer, and what the numpy-based runtime wrote);
- shortest, the handler: ``json_codec.tensor_values`` then ``json_codec.dumps`` of the answer
  (``{"y": ...}``, 6 bytes more): the shortest decimal that reads back as the same float32,
  found by yyjson's float32 writer for arrays of ``json_codec.SMALL`` values or more, the
  answer then written by yyjson too;
- shortest, one by one: ``json_codec.shortest``'s per-value Python path (what the handler uses
  for float16, arrays with non-finite values and arrays under ``json_codec.SMALL`` values);
- the handler's, gzip-compressed: what a client sending ``Accept-Encoding: gzip`` gets
  (``handler.compression``, zlib level 1), encode and compression timed together;
- ``%.9g`` text: nine significant digits always round-trip a float32; one ``%`` pass per row
  writes the array's text, with no float parse or ``repr`` per value;
- base64 of the float32 bytes, one string per row: the text-embedding pipeline's answer to
  ``"parameters": {"encoding_format": "base64"}`` (OpenAI's embeddings API's name for it).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handler import compression, json_codec
from handler.http import Response
from handler.ort.tensor import Tensor, nest
from handler.pipelines import text_embedding


def nine_digits(tensor: Tensor) -> str:
    """The array's JSON text at ``%.9g``, one ``%`` pass per innermost row."""
    *outer, width = tensor.shape
    values = tensor.flat()
    row = "[" + ",".join(["%.9g"] * width) + "]"
    rows = [row % tuple(values[i:i + width]) for i in range(0, len(values), width)]
    for dim in reversed(outer[1:]):
        rows = ["[" + ",".join(rows[i:i + dim]) + "]" for i in range(0, len(rows), dim)]
    return "[" + ",".join(rows) + "]"


def handler_text(tensor: Tensor) -> str:
    """The body the handler writes for the tensor: its own answer (``{"y": ...}``, as the
    tensor pipeline's ``outputs`` hold it), which yyjson writes once loaded."""
    return json_codec.dumps({"y": json_codec.tensor_values(tensor)})[0]


def one_by_one(tensor: Tensor) -> str:
    """The body through ``json_codec.shortest``'s per-value path."""
    return json_codec.dumps(nest(json_codec.shortest(tensor.flat(), tensor.dtype),
                                 tensor.shape))[0]


def shortest_gzip(tensor: Tensor) -> bytes | str:
    """The handler's answer to a client that accepts gzip (``handler.compression``): its text,
    then zlib level 1; these bytes reach the client (the gateway gets them in base64, 4/3 as
    many). A body gzip would not shrink in base64 is sent as it is: its text."""
    response = Response(200, {"y": json_codec.tensor_values(tensor)})
    compression.negotiate(response, "gzip")
    return response.body if response.text is None else response.text


WAYS: dict[str, Callable[[Tensor], str | bytes]] = {
    "float64 repr (json.dumps of tolist)": lambda t: json.dumps(t.tolist(),
                                                                 separators=(",", ":")),
    "shortest float32 (the handler: json_codec)": handler_text,
    "the same, gzip-compressed (Accept-Encoding: gzip)": shortest_gzip,
    "shortest float32, one by one (json_codec.shortest)": one_by_one,
    "%.9g text": nine_digits,
    "float32 bytes as base64 (encoding_format base64)": lambda t: json_codec.dumps(
        text_embedding._base64_rows(t, t.shape[-1]))[0],
}


def outputs(model: Path, batch: int) -> list[Tensor]:
    from handler.bootstrap import create
    from handler.settings import Settings

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model)}, warmup=False))
    example = service.example_inputs()
    inputs = example * batch if isinstance(example, list) else example
    if isinstance(example, list) and all(isinstance(text, str) for text in example):
        # distinct sentences: repeated rows would flatter the gzip row (gzip finds repeats)
        inputs = [f"{text} ({i})" for i, text in enumerate(inputs)]
    found = service.model.run(service.pipeline.preprocess(inputs, {}))
    return [t for t in found.values() if isinstance(t, Tensor) and t.dtype == "float32"]


def measure(tensors: list[Tensor], repeat: int) -> dict[str, dict[str, float]]:
    best = dict.fromkeys(WAYS, float("inf"))
    for _ in range(repeat):
        for name, way in WAYS.items():
            started = time.perf_counter()
            for tensor in tensors:
                way(tensor)
            best[name] = min(best[name], time.perf_counter() - started)
    results = {}
    for name, way in WAYS.items():
        texts = [way(tensor) for tensor in tensors]
        for tensor, text in zip(tensors, texts, strict=True):
            value = json.loads(gzip.decompress(text) if isinstance(text, bytes) else text)
            if isinstance(value, dict):  # the handler's answer: {"y": the array}
                (value,) = value.values()
            if value and isinstance(value[0], str):  # base64 rows: the float32 bytes themselves
                raw = b"".join(base64.b64decode(row, validate=True) for row in value)
                back = struct.unpack(f"<{len(raw) // 4}f", raw)
            else:
                flat = _flatten(value)
                back = struct.unpack(f"<{len(flat)}f", struct.pack(f"<{len(flat)}f", *flat))
            if list(back) != tensor.flat():
                raise AssertionError(f"{name}: does not read back as the same float32")
        results[name] = {"bytes": sum(map(len, texts)), "ms": best[name] * 1e3}
    return results


def _flatten(value: Any) -> list[float]:
    while value and isinstance(value[0], list):
        value = [v for row in value for v in row]
    return value


def report(model: Path, batch: int, repeat: int) -> str:
    tensors = outputs(model, batch)
    results = measure(tensors, repeat)
    base = results[next(iter(WAYS))]
    count = sum(t.size for t in tensors)
    lines = [f"model: {model}, {count:,} float32 values (batch {batch}); encode: best of "
             f"{repeat}, interleaved", "",
             "| JSON for float32 outputs | bytes | × float64 repr | encode ms | "
             "× float64 repr | µs per value |", "|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['bytes']:,} | {r['bytes'] / base['bytes']:.2f}× | "
                     f"{r['ms']:.2f} | {r['ms'] / base['ms']:.2f}× | "
                     f"{r['ms'] * 1e3 / count:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("models/minilm"))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args(argv)
    print(report(args.model, args.batch, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
