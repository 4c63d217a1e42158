"""Float32 outputs as JSON: bytes and encode time of the ways to write them, on a real output.

    python -m benchmarks.json_floats [--model models/minilm] [--batch 8] [--repeat 40]

The model's example, repeated ``--batch`` times (a text example made distinct sentences by a
number each), runs once through the handler's session; each float32 output tensor is then
written as a JSON body six ways, interleaved, and each way's text is checked to read back as
the same float32 values:
- float64 repr: ``tolist()`` of the widened values (what the numpy-based runtime wrote);
- shortest, in C: ``Tensor.encoded_json()`` through ``strict_json.dumps`` (what the handler
  writes): the shortest decimal that reads back as the same float32, written by yyjson
  (``handler.ort.float_json``) and spliced into the body as the array's text (``EncodedList``);
- shortest, pure Python: the same text from ``handler.ort.float_text``'s bulk bytes passes (what
  the handler writes for float16, non-finite values and arrays under ``float_text.SMALL``);
- the same, gzip-compressed: what a client sending ``Accept-Encoding: gzip`` gets
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

from handler import compression, strict_json
from handler.http import Response
from handler.ort import float_text
from handler.ort.tensor import EncodedList, Tensor, _nested_joins, nest
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


def python_shortest(tensor: Tensor) -> str:
    """The body as ``encoded_json`` wrote it before yyjson: ``float_text``'s passes."""
    texts, floats, non_finite = float_text.texts(tensor.flat(), tensor.dtype)
    value = EncodedList(nest(floats, tensor.shape))
    value.text, value.non_finite = _nested_joins(texts, tensor.shape).decode(), non_finite
    return strict_json.dumps(value)[0]


def shortest_gzip(tensor: Tensor) -> bytes:
    """The handler's answer to a client that accepts gzip (``handler.compression``): the
    yyjson text, then zlib level 1; these bytes reach the client (the gateway gets them in
    base64, 4/3 as many). A body gzip would not shrink in base64 is sent as it is: its text."""
    response = Response(200, tensor.encoded_json())
    compression.negotiate(response, "gzip")
    return response.body if response.text is None else response.text


WAYS: dict[str, Callable[[Tensor], str | bytes]] = {
    "float64 repr (numpy runtime)": lambda t: strict_json.dumps(t.tolist())[0],
    "shortest float32, yyjson (the handler)": lambda t: strict_json.dumps(t.encoded_json())[0],
    "the same, gzip-compressed (Accept-Encoding: gzip)": shortest_gzip,
    "shortest float32, pure Python (float_text)": python_shortest,
    "%.9g text": nine_digits,
    "float32 bytes as base64 (encoding_format base64)": lambda t: strict_json.dumps(
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
