"""Rewrites that keep a graph's meaning but put it in the shape onnxruntime's transformer fusion
patterns look for (they were written against TorchScript exports; ``torch.onnx`` with
``dynamo=True`` optimizes the same computation into slightly different ops):

- attention scores scaled by ``Mul(scores, s)`` → ``Div(scores, 1/s)``: with the mask ``Mul`` as
  the other input of the ``Add`` before ``Softmax``, the fusion cannot tell the two apart;
- the mask's ``Unsqueeze(mask, axes=[1, 2])`` → two single-axis ``Unsqueeze`` nodes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


def for_attention_fusion(model: onnx.ModelProto) -> int:
    """Rewrite ``model`` in place; returns the number of nodes changed."""
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    constants.update({node.output[0]: numpy_helper.to_array(node.attribute[0].t)
                      for node in graph.node
                      if node.op_type == "Constant" and node.attribute
                      and node.attribute[0].name == "value"})
    changed = 0
    for softmax in (n for n in graph.node if n.op_type == "Softmax"):
        add = producer.get(softmax.input[0])
        scale = producer.get(add.input[0]) if add is not None and add.op_type == "Add" else None
        if scale is None or scale.op_type != "Mul":
            continue
        for index in (0, 1):
            value = constants.get(scale.input[1 - index])
            source = producer.get(scale.input[index])
            if value is not None and value.size == 1 and value.item() != 0 and \
                    source is not None and source.op_type == "MatMul":
                reciprocal = numpy_helper.from_array(
                    np.asarray(1.0 / value, dtype=value.dtype).reshape(value.shape),
                    f"{scale.name or scale.output[0]}_reciprocal")
                graph.initializer.append(reciprocal)
                scale.op_type = "Div"
                scale.input[:] = [scale.input[index], reciprocal.name]
                changed += 1
                break
    mask_inputs = {i.name for i in graph.input if i.name == "attention_mask"}
    nodes = []
    for node in graph.node:
        axes = constants.get(node.input[1]) if len(node.input) > 1 else None
        if (node.op_type == "Unsqueeze" and node.input[0] in mask_inputs and axes is not None
                and axes.size == 2):
            first, second = sorted(int(a) for a in axes.ravel())
            names = [f"{node.output[0]}_axis{i}" for i in (first, second)]
            graph.initializer.extend(numpy_helper.from_array(np.array([a], dtype=np.int64), n)
                                     for a, n in zip((first, second), names, strict=True))
            middle = f"{node.output[0]}_unsqueezed"
            nodes.append(helper.make_node("Unsqueeze", [node.input[0], names[0]], [middle],
                                          name=f"{node.name}_a"))
            nodes.append(helper.make_node("Unsqueeze", [middle, names[1]], list(node.output),
                                          name=f"{node.name}_b"))
            changed += 1
        else:
            nodes.append(node)
    graph.ClearField("node")
    graph.node.extend(nodes)
    return changed
