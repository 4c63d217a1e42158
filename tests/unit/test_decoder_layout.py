"""The decoder layout's head size: the signature's number, or the manifest's ``head_dim`` where
onnxruntime-genai's export leaves it symbolic; the build reads it from genai_config.json or the
graph (``llm_graph``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from handler.generation.layout import LayoutError, recognise
from handler.manifest import TensorInfo
from onnx_lambda.build_model import llm_graph


def _signature(head: int | str) -> tuple[list[TensorInfo], list[TensorInfo]]:
    inputs = [TensorInfo("input_ids", "int64", ("batch", "sequence")),
              TensorInfo("attention_mask", "int64", ("batch", "total"))]
    outputs = [TensorInfo("logits", "float32", ("batch", "sequence", 32))]
    for layer in range(2):
        for side in ("key", "value"):
            inputs.append(TensorInfo(f"past_key_values.{layer}.{side}", "float32",
                                     ("batch", 3, "past", head)))
            outputs.append(TensorInfo(f"present.{layer}.{side}", "float32",
                                      ("batch", 3, "total", head)))
    return inputs, outputs


def test_a_symbolic_head_size_takes_the_manifests() -> None:
    layout = recognise(*_signature("kv_cache_dim"), head_dim=64)
    assert (layout.layers, layout.kv_heads, layout.head_dim) == (2, 3, 64)
    assert not layout.position_ids


def test_a_symbolic_head_size_without_one_says_what_to_run() -> None:
    with pytest.raises(LayoutError, match=r"kv_cache_dim.*symbolic.*onnx-lambda build-model"):
        recognise(*_signature("kv_cache_dim"))


def test_a_fixed_head_size_wins_and_a_contrary_option_is_refused() -> None:
    assert recognise(*_signature(16)).head_dim == 16
    assert recognise(*_signature(16), head_dim=16).head_dim == 16
    with pytest.raises(LayoutError, match=r"head_dim is 8, but past_key_values\.0\.key has head "
                                          "size 16"):
        recognise(*_signature(16), head_dim=8)


@pytest.mark.parametrize("bad", [0, -4, "64", True, 6.4])
def test_a_head_dim_option_that_is_no_positive_integer_is_refused(bad: object) -> None:
    with pytest.raises(LayoutError, match="not a positive integer"):
        recognise(*_signature("kv_cache_dim"), head_dim=bad)  # type: ignore[arg-type]


def _gqa_graph(packed: bool, nbits: bool) -> helper.ModelProto:
    """A GroupQueryAttention fed by a projection of width (9 + 2·3)·64 packed or 9·64."""
    width = (9 + 2 * 3) * 64 if packed else 9 * 64
    if nbits:
        projection = helper.make_node("MatMulNBits", ["x", "w", "s"], ["qkv"], K=576, N=width,
                                      bits=4, block_size=32, domain="com.microsoft")
        weights = []
    else:
        projection = helper.make_node("MatMul", ["x", "w"], ["qkv"])
        weights = [helper.make_tensor("w", TensorProto.FLOAT, [576, width],
                                      [0.0] * (576 * width))]
    bias = helper.make_node("Add", ["qkv", "b"], ["qkv_b"])
    key_value = ["", ""] if packed else ["k", "v"]
    attention = helper.make_node("GroupQueryAttention", ["qkv_b", *key_value, "pk", "pv"],
                                 ["y", "k0", "v0"], num_heads=9, kv_num_heads=3,
                                 domain="com.microsoft")
    graph = helper.make_graph([projection, bias, attention], "g", [], [], initializer=weights)
    return helper.make_model(graph)


@pytest.mark.parametrize(("packed", "nbits"), [(True, False), (False, False), (True, True)])
def test_the_head_size_is_read_from_the_attention_nodes(tmp_path: Path, packed: bool,
                                                        nbits: bool) -> None:
    assert llm_graph.head_size(tmp_path / "model.onnx", _gqa_graph(packed, nbits)) == 64


def test_genai_config_then_the_graph_then_config_json(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    bare = helper.make_model(helper.make_graph([], "g", [], []))
    assert llm_graph.head_size(source, bare) is None
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 576,
                                                      "num_attention_heads": 9}))
    assert llm_graph.head_size(source, bare) == 64
    (tmp_path / "config.json").write_text(json.dumps({"head_dim": 48}))
    assert llm_graph.head_size(source, bare) == 48
    assert llm_graph.head_size(source, _gqa_graph(True, False)) == 64  # the graph over config
    (tmp_path / "genai_config.json").write_text(json.dumps(
        {"model": {"decoder": {"head_size": 80}}}))
    assert llm_graph.head_size(source, _gqa_graph(True, False)) == 80
