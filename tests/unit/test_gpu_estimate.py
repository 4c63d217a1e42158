"""CPU vs GPU when no GPU was measured: the model's FLOPs counted from its graph (MatMul, Gemm,
Conv at the given shapes), the GPU latency and cost estimated from them and the GPU's published
throughput, and every sentence made from the estimate saying so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_lambda.plan import flops, gpu_compare
from onnx_lambda.plan.cost import PriceTable
from onnx_lambda.plan.equal_p99 import Option

PRICES = PriceTable.load()


def mlp(path: Path, width: int, layers: int, batch: str | int = "batch") -> Path:
    """x[batch, width] → ``layers`` MatMuls of width² → a Gemm to 10, then a 3×3 Conv on a
    [1, 2, 8, 8] side input: every counted op kind, at known shapes."""
    rng = np.random.default_rng(0)
    inits, nodes, last = [], [], "x"
    for i in range(layers):
        inits.append(numpy_helper.from_array(
            rng.standard_normal((width, width)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [last, f"w{i}"], [f"h{i}"]))
        last = f"h{i}"
    inits += [numpy_helper.from_array(np.ones((10, width), np.float32), "g"),
              numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "k")]
    nodes += [helper.make_node("Gemm", [last, "g"], ["y"], transB=1),
              helper.make_node("Conv", ["img", "k"], ["z"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def test_flops_are_counted_at_the_given_shapes(tmp_path: Path) -> None:
    path = mlp(tmp_path / "m.onnx", width=64, layers=3)
    conv = 2 * (4 * 8 * 8) * (2 * 3 * 3)
    one = flops.count(path)  # free batch: 1
    assert one.flops == 3 * 2 * 64 * 64 + 2 * 10 * 64 + conv
    eight = flops.count(path, {"batch": 8})
    assert eight.flops == 8 * (3 * 2 * 64 * 64 + 2 * 10 * 64) + conv
    assert one.weight_bytes == 4 * (3 * 64 * 64 + 10 * 64 + 4 * 2 * 3 * 3)
    assert one.nodes == 5
    assert one.io_bytes == 4 * (64 + 2 * 8 * 8 + 10 + 4 * 8 * 8)


def test_a_tiny_model_stays_on_cpu_and_the_estimate_says_it_is_one(tmp_path: Path) -> None:
    work = flops.count(mlp(tmp_path / "m.onnx", width=64, layers=3))
    side = gpu_compare.estimate(work, PRICES, utilization=0.6)
    assert side.estimated and side.option is not None
    assert side.option.label == "GPU g6.xlarge (estimate)"  # the cheapest priced GPU type
    assert "ESTIMATES" in side.note and "CPU figures are measured" in side.note
    cpu = [Option("c7i.large, 1 per vCPU", 0.2, 0.35)]
    text, doc = gpu_compare.summary(cpu, side)
    assert doc["measured"] is False and doc["estimate"] is True
    assert doc["p99"]["lower"] == "CPU" and "CPU is faster" in text
    assert "ESTIMATES" in text


def test_a_heavy_model_is_faster_on_the_gpu(tmp_path: Path) -> None:
    path = mlp(tmp_path / "big.onnx", width=2048, layers=4)
    work = flops.count(path, {"batch": 64})
    side = gpu_compare.estimate(work, PRICES, utilization=0.6)
    assert side.option is not None
    # 4 × 2 × 64 × 2048² ≈ 2.1 GFLOPs: ~0.3 ms at 25 % of an L4, against a CPU's tens of ms
    assert side.option.p99_ms < 2.0
    text, doc = gpu_compare.summary([Option("c7i.xlarge, 1 per vCPU", 60.0, 40.0)], side)
    assert doc["p99"]["lower"] == "GPU" and doc["estimate"] is True
    assert "GPU is faster" in text
