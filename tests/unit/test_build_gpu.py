"""build-model's GPU verdict (onnx_lambda/build_model/gpu.py) on small graphs."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from onnx_lambda.build_model.gpu import suitability
from tests.support import models


def _graph(tmp_path: Path, nodes: list[onnx.NodeProto], dtype: int = TensorProto.FLOAT) -> Path:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, [2])],
                              [helper.make_tensor_value_info("y", dtype, [2])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return path


def test_a_float_graph_is_suitable(tmp_path: Path) -> None:
    path = models.identity(tmp_path / "id.onnx", "float32", 2)
    assert suitability(path) == {"suitable": True, "reasons": []}


def test_string_inputs_make_it_unsuitable(tmp_path: Path) -> None:
    verdict = suitability(models.strings(tmp_path / "s.onnx"))
    assert not verdict["suitable"] and "string tensor" in verdict["reasons"][0]


def test_ml_domain_ops_even_in_a_subgraph_make_it_unsuitable(tmp_path: Path) -> None:
    inner = helper.make_graph([helper.make_node("Normalizer", ["x"], ["z"],
                                                domain="ai.onnx.ml")], "then", [],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    branch = helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)
    verdict = suitability(_graph(tmp_path, [branch]))
    assert verdict == {"suitable": False,
                       "reasons": ["ai.onnx.ml ops (CPU only): Normalizer"]}


def test_integer_quantized_ops_make_it_unsuitable(tmp_path: Path) -> None:
    node = helper.make_node("QLinearMatMul", ["x"] * 8, ["y"])
    verdict = suitability(_graph(tmp_path, [node], TensorProto.UINT8))
    assert verdict["reasons"] == ["integer-quantized ops: QLinearMatMul"]
