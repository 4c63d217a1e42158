"""``onnx-lambda inspect MODEL``: what a model is and how to build it (``build-model`` prints the
same summary first).

MODEL is an ``.onnx`` file or a model folder (its manifest's portable model is read). The model
is parsed without its external data and never run: signature with symbolic dims by name (shared
names, which tie axes, apart from anonymous ones, see ``handler.dims``), opsets, sizes,
initializer bytes, external data, the nodes dynamic quantization would touch, whether an example
is known, and the flags that pin what the build would otherwise have to find.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

import onnx
from google.protobuf.message import DecodeError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from handler.dims import is_shared
from handler.manifest import FILENAME, Manifest, TensorInfo
from onnx_lambda.build_model import ladder, quantize
from onnx_lambda.build_model.errors import InvalidModelError
from onnx_lambda.sizes import human_size


def load(target: Path) -> tuple[Path, onnx.ModelProto, Manifest | None]:
    """The model file, its graph (without external data) and the folder's manifest, if any."""
    manifest = None
    path = target
    if target.is_dir():
        try:
            manifest = Manifest.load(target)
        except (OSError, ValueError, KeyError) as exc:
            raise InvalidModelError(f"{target}: no readable {FILENAME} ({exc})") from exc
        path = target / manifest.portable
    try:
        return path, onnx.load(str(path), load_external_data=False), manifest
    except (DecodeError, ValueError, OSError) as exc:
        raise InvalidModelError(f"{path}: not an ONNX model ({exc.__class__.__name__}: "
                                f"{exc})") from exc


def infos(values: Any, skip: Collection[str] = ()) -> tuple[TensorInfo, ...]:
    """Graph inputs/outputs as ``TensorInfo``: static sizes, dim_param names, ``None``."""
    result = []
    for value in values:
        if value.name in skip:
            continue
        tensor = value.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param or None
                     for d in tensor.shape.dim) if value.type.HasField("tensor_type") else ()
        result.append(TensorInfo(value.name, _dtype(value.type), dims))
    return tuple(result)


def _dtype(kind: onnx.TypeProto) -> str:
    which = kind.WhichOneof("value")
    if which == "tensor_type":
        elem = kind.tensor_type.elem_type
        if elem == onnx.TensorProto.STRING:
            return "str"
        try:
            return onnx.helper.tensor_dtype_to_np_dtype(elem).name
        except (KeyError, TypeError):
            return onnx.TensorProto.DataType.Name(elem).lower()
    if which == "sequence_type":
        return f"seq({_dtype(kind.sequence_type.elem_type)})"
    if which == "map_type":
        key = onnx.TensorProto.DataType.Name(kind.map_type.key_type).lower()
        return f"map({key}, {_dtype(kind.map_type.value_type)})"
    return which or "unknown"


def summarize(path: Path, model: onnx.ModelProto, manifest: Manifest | None = None,
              op_types: tuple[str, ...] = quantize.QuantizeSettings().op_types,
              example: str | None = None) -> dict[str, Any]:
    """``load``'s model file, graph (external data not read in) and manifest, summarized;
    ``example``: where an example comes from when the caller knows (a build's own)."""
    graph = model.graph
    weights = {init.name for init in graph.initializer}
    inputs, outputs = infos(graph.input, weights), infos(graph.output)
    external: dict[str, int] = {}
    initializer_bytes = 0
    for init in graph.initializer:
        location = {e.key: e.value for e in init.external_data}
        if init.data_location == onnx.TensorProto.EXTERNAL:
            size = int(location.get("length", 0))
            external[location.get("location", "?")] = external.get(
                location.get("location", "?"), 0) + size
            initializer_bytes += size
        else:
            initializer_bytes += init.ByteSize()
    shared: dict[str, list[str]] = {}
    anonymous: list[str] = []
    for spec in (*inputs, *outputs):
        for axis, d in enumerate(spec.shape):
            where = f"{spec.name}[{axis}]"
            if is_shared(d):
                shared.setdefault(str(d), []).append(where)
            elif not isinstance(d, int):
                anonymous.append(f"{where} ({d!r})" if d else f"{where} (unnamed)")
    nodes = quantize.candidates(model, op_types)
    op_of = {n.name: n.op_type for n in graph.node}
    by_op = Counter(op_of[name] for name in nodes)
    ops = Counter(node.op_type for node in graph.node)
    if manifest is not None and example is None:
        example = (f"{FILENAME} (inline)" if manifest.example is not None
                   else manifest.example_file)
    flags = ladder.suggest(model, inputs) if example is None else []
    quantized = manifest is not None and manifest.metadata.get(
        "quantization", {}).get("type", "none") != "none"
    if nodes and not quantized:  # a quantized folder's candidates are the nodes kept in fp32
        flags.append("--quantize")
    return {
        "file": str(path), "size_bytes": path.stat().st_size,
        "ir_version": model.ir_version,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "nodes": len(graph.node), "ops": dict(ops.most_common()),
        "initializer_bytes": initializer_bytes,
        "external_data": external,
        "inputs": [_tensor(t) for t in inputs], "outputs": [_tensor(t) for t in outputs],
        "dims": {"shared": shared, "anonymous": anonymous},
        "quantize": {"op_types": list(op_types), "candidates": dict(by_op), "nodes": nodes},
        "example": example, "suggested_flags": flags,
    }


def _tensor(info: TensorInfo) -> dict[str, Any]:
    return {"name": info.name, "dtype": info.dtype, "shape": list(info.shape)}


def render(summary: dict[str, Any], console: Console) -> None:
    size = summary["size_bytes"]
    opsets = ", ".join(f"{d} {v}" for d, v in summary["opsets"].items())
    console.print(f"[bold]{escape(summary['file'])}[/bold]  {human_size(size)}, "
                  f"{summary['nodes']} nodes, opsets {escape(opsets)}"
                  + (f", by {escape(summary['producer'])}" if summary["producer"] else ""),
                  highlight=False, soft_wrap=True)
    external = summary["external_data"]
    files = ", ".join(f"{f} {human_size(n)}" for f, n in external.items())
    console.print(f"  initializers {human_size(summary['initializer_bytes'])}"
                  + (f" (external: {files})" if external else ", no external data"),
                  highlight=False)
    table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
    for column in ("", "name", "dtype", "shape"):
        table.add_column(column)
    for kind in ("inputs", "outputs"):
        for tensor in summary[kind]:
            dims = ", ".join("?" if d is None else str(d) for d in tensor["shape"])
            table.add_row(kind[:-1], escape(tensor["name"]), tensor["dtype"],
                          escape(f"[{dims}]"))
    console.print(table)
    dims = summary["dims"]
    for symbol, where in dims["shared"].items():
        console.print(f"  dim [cyan]{escape(symbol)}[/cyan] (shared: one size) at "
                      f"{escape(', '.join(where))}", highlight=False, soft_wrap=True)
    if dims["anonymous"]:
        console.print(f"  anonymous dims (each its own size): "
                      f"{escape(', '.join(dims['anonymous']))}", highlight=False, soft_wrap=True)
    quant = summary["quantize"]
    touched = ", ".join(f"{op} ×{n}" for op, n in quant["candidates"].items())
    console.print(f"  quantizer ({'/'.join(quant['op_types'])} with a constant weight) would "
                  f"touch: {touched or 'nothing'}", highlight=False)
    console.print(f"  example: {escape(summary['example'] or 'none known (the build finds one)')}",
                  highlight=False)
    if summary["suggested_flags"]:
        console.print(f"  flags to consider: {escape(' '.join(summary['suggested_flags']))}",
                      highlight=False, soft_wrap=True)
