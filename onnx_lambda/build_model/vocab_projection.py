"""A decoder's vocabulary projection, rewritten twice by ``build-model``: onto the last position
only (``last_position_logits``), and in column blocks (``split_projection``), so that loading
the model peaks at its weights.

onnxruntime maps an artifact's external data and, at session creation, packs each constant
``MatMul`` weight into a buffer of its own (MLAS's packed layout) before it lets the mapped pages
go: for a moment one weight is in memory twice. Every layer's weights are a few MiB, but the
vocabulary projection is the model's largest tensor — SmolLM2's 576 × 49,152 is 108 MiB, a
Llama 3's 2,048 × 128,256 1 GiB — so it alone sets the peak. Split into ``MatMul``s of at most
``BLOCK_BYTES`` each over column ranges and joined by a ``Concat`` on the last axis, the same
logits come out and the load peaks one block above the weights: SmolLM2's peak RSS went from 664
to 583 MiB for 515 MiB of weights (4 blocks; steady RSS 556 MiB either way). A step runs
``parts`` small products instead of one, on the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from handler.generation.layout import DecoderLayout
from onnx_lambda.build_model.llm_package import save
from onnx_lambda.build_model.signature import cpu_session

BLOCK_BYTES = 32 << 20  # a block's weight at most: the load's peak above the weights


def split_projection(graph: Any, node: Any) -> int:
    """Rewrite ``node`` (a ``MatMul`` whose second input is a constant [hidden, vocabulary]
    initializer) as column blocks joined by ``Concat``; → the number of blocks (1: left as it
    was, the weight being small, shared with another node, or not an initializer)."""
    import numpy as np
    from onnx import helper, numpy_helper

    weight = next((t for t in graph.initializer if t.name == node.input[1]), None)
    if weight is None or len(weight.dims) != 2:
        return 1
    size = int(np.prod(weight.dims)) * np.dtype(helper.tensor_dtype_to_np_dtype(
        weight.data_type)).itemsize
    parts = -(-size // BLOCK_BYTES)
    shared = sum(weight.name in n.input for n in graph.node) > 1  # a tied embedding's too
    if parts < 2:
        return 1
    values = numpy_helper.to_array(weight)
    names = []
    for index, block in enumerate(np.array_split(values, parts, axis=1)):
        name = f"{weight.name}.block{index}"
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(block), name))
        names.append(name)
    if not shared:
        graph.initializer.remove(weight)
    outputs = [f"{node.output[0]}.block{i}" for i in range(parts)]
    blocks = [helper.make_node("MatMul", [node.input[0], name], [out],
                               name=f"{node.name or 'logits'}.block{i}")
              for i, (name, out) in enumerate(zip(names, outputs, strict=True))]
    join = helper.make_node("Concat", outputs, list(node.output), axis=-1,
                            name=f"{node.name or 'logits'}.join")
    nodes = list(graph.node)
    at = nodes.index(node)
    nodes[at:at + 1] = [*blocks, join]
    del graph.node[:]
    graph.node.extend(nodes)
    return parts


def last_position_logits(source: Path, target: Path, layout: DecoderLayout) -> int:
    """Project only the last position onto the vocabulary: the ``MatMul`` that makes ``logits``
    takes ``Gather(hidden, [-1], axis=1)`` instead of every position's hidden state. The
    generate pipeline reads the last row alone, and a prompt's other rows cost a
    sequence × hidden × vocabulary product for nothing (~12 % of a 45-token prefill of the
    246 M test decoder). Kept only when the result's logits equal the source's last row on a
    5-token prompt (a graph whose MatMul sees [batch × sequence, hidden] would differ). The
    projection is split into column blocks on the way (``vocab_split``). → 0 where not applied,
    else the projection's blocks (1: not split)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    node = next((n for n in graph.node if "logits" in n.output), None)
    if node is None or node.op_type != "MatMul":
        return 0
    hidden = node.input[0]
    graph.initializer.append(numpy_helper.from_array(np.array([-1], np.int64), "last_position"))
    gather = helper.make_node("Gather", [hidden, "last_position"], ["last_hidden"], axis=1,
                              name="last_position_hidden")
    node.input[0] = "last_hidden"
    nodes = list(graph.node)
    nodes.insert(nodes.index(node), gather)
    del graph.node[:]
    graph.node.extend(nodes)
    for value in graph.output:
        if value.name == "logits":
            value.type.tensor_type.shape.dim[1].Clear()
            value.type.tensor_type.shape.dim[1].dim_value = 1
    blocks = split_projection(graph, node)
    save(model, target)
    feeds = _prefill_feeds(layout, 5)
    try:
        want = cpu_session(source).run(["logits"], feeds)[0][:, -1:]
        got = cpu_session(target).run(["logits"], feeds)[0]
    except Exception:  # onnxruntime's own errors: the rewrite does not fit this graph
        return 0
    same = got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5)
    return blocks if same else 0


def _prefill_feeds(layout: DecoderLayout, count: int) -> dict[str, Any]:
    import numpy as np

    ids = layout.ids_dtype
    feeds: dict[str, Any] = {"input_ids": np.arange(3, 3 + count, dtype=ids)[None]}
    if layout.attention_mask:
        feeds["attention_mask"] = np.ones((1, count), ids)
    if layout.position_ids:
        feeds["position_ids"] = np.arange(count, dtype=ids)[None]
    empty = np.zeros((1, layout.kv_heads, 0, layout.head_dim), layout.kv_dtype)
    feeds.update(dict.fromkeys(layout.inputs()[len(feeds):], empty))
    return feeds
