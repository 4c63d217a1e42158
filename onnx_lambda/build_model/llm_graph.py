"""What a decoder's signature may leave out, read from the files beside it or from its graph.

onnxruntime-genai's builder writes the cache as ``[batch, kv_heads, past, kv_cache_dim]``: the
head size is symbolic. It is found, first to last:

1. ``genai_config.json`` beside the model: ``model.decoder.head_size`` (genai's own record,
   written with the graph);
2. the graph: a ``GroupQueryAttention`` node's ``num_heads`` / ``kv_num_heads`` and the width of
   the projection that feeds it (a ``MatMul``'s constant weight, or ``MatMulNBits``' ``N``):
   ``width / num_heads`` for separate query/key/value inputs, ``width / (num_heads + 2 ×
   kv_num_heads)`` for genai's packed one;
3. ``config.json`` beside it (the checkpoint's): ``head_dim``, else ``hidden_size /
   num_attention_heads``.

The number is recorded in the manifest (pipeline option ``head_dim``) and the handler takes it
from there (``handler.generation.layout``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

_PROJECTIONS = ("MatMul", "MatMulNBits")


def head_size(source: Path, model: onnx.ModelProto) -> int | None:
    """The attention head size of the decoder at ``source`` (``model``: its graph, external
    data not needed), or None where no file and no node says it."""
    genai = _json(source.parent / "genai_config.json")
    found = genai.get("model", {}).get("decoder", {}).get("head_size")
    if _positive(found):
        return int(found)
    found = _from_attention(model)
    if found is not None:
        return found
    config = _json(source.parent / "config.json")
    if _positive(config.get("head_dim")):
        return int(config["head_dim"])
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if _positive(hidden) and _positive(heads) and hidden % heads == 0:
        return int(hidden // heads)
    return None


def _from_attention(model: onnx.ModelProto) -> int | None:
    graph = model.graph
    node = next((n for n in graph.node if n.op_type == "GroupQueryAttention"), None)
    if node is None:
        return None
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    heads, kv_heads = attributes.get("num_heads"), attributes.get("kv_num_heads")
    if not _positive(heads) or not _positive(kv_heads):
        return None
    packed = len(node.input) < 3 or not node.input[1]  # query, key and value in one tensor
    width = _width(graph, node.input[0])
    if width is None:
        return None
    parts = heads + 2 * kv_heads if packed else heads
    return width // parts if width % parts == 0 else None


def _width(graph: onnx.GraphProto, name: str) -> int | None:
    """The last dimension of ``name`` where a projection with constant weights makes it
    (through a bias ``Add``)."""
    producers = {out: n for n in graph.node for out in n.output}
    shapes = {i.name: list(i.dims) for i in graph.initializer}
    for _ in range(4):  # (MatMul → Add bias → attention, at most a short chain)
        node = producers.get(name)
        if node is None:
            return None
        if node.op_type == "MatMulNBits":
            found = next((helper.get_attribute_value(a) for a in node.attribute
                          if a.name == "N"), None)
            return int(found) if _positive(found) else None
        if node.op_type == "MatMul" and node.input[1] in shapes:
            return int(shapes[node.input[1]][-1])
        if node.op_type != "Add":
            return None
        name = node.input[0]
    return None


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
