"""Whether a model is worth ONNX Runtime's CUDA provider: recorded in the manifest's ``gpu``
(``{"suitable": bool, "reasons": [...]}``); the runtime's ``auto`` stays on CPU for a model
marked unsuitable (handler/ort/providers.py).

Conservative: "suitable" means every node can have a CUDA kernel, so a GPU is not paid for to
copy tensors between devices around CPU-only nodes. A model is unsuitable when it has
- string or non-tensor (sequence, map) inputs or outputs: CUDA has no kernels for them;
- a node of the ``ai.onnx.ml`` domain (trees, linear classifiers, ZipMap, ...): CPU only;
- integer-quantized ops (QLinear*, MatMulInteger, ConvInteger, DynamicQuantizeLinear): the
  CUDA provider implements few of them; a quantized model is a CPU optimization anyway.
Nodes inside subgraphs (If, Loop, Scan) count too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx

CPU_ONLY_DOMAIN = "ai.onnx.ml"
QUANTIZED_OPS = ("MatMulInteger", "ConvInteger", "DynamicQuantizeLinear")


def _nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attribute.g)
            for sub in attribute.graphs:
                yield from _nodes(sub)


def _value_problem(value: onnx.ValueInfoProto) -> str | None:
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        return f"{value.name} is a {kind or 'untyped value'}"
    if value.type.tensor_type.elem_type == onnx.TensorProto.STRING:
        return f"{value.name} is a string tensor"
    return None


def suitability(path: Path) -> dict[str, Any]:
    model = onnx.load(str(path), load_external_data=False)
    reasons = [p for v in (*model.graph.input, *model.graph.output)
               if (p := _value_problem(v)) is not None]
    ops = {(n.domain or "ai.onnx", n.op_type) for n in _nodes(model.graph)}
    cpu_only = sorted(op for domain, op in ops if domain == CPU_ONLY_DOMAIN)
    if cpu_only:
        reasons.append(f"{CPU_ONLY_DOMAIN} ops (CPU only): {', '.join(cpu_only)}")
    quantized = sorted(op for _, op in ops if op.startswith("QLinear") or op in QUANTIZED_OPS)
    if quantized:
        reasons.append(f"integer-quantized ops: {', '.join(quantized)}")
    return {"suitable": not reasons, "reasons": reasons}
