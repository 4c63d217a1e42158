"""Activation-aware smoothing (SmoothQuant) before quantization, ``--smooth ALPHA``.

Dynamic INT8 quantizes each activation per tensor, so a few input channels with outliers (a
GELU's output, a LayerNorm's) waste most of the int8 range. For a product X·W and each input
channel j, ``s_j = max|X_j|^alpha / max_k |W_jk|^(1 - alpha)`` (activation maxima calibrated
on the build's samples) moves range from the activation into the weight: X' = X / s,
W' = diag(s)·W, so X'·W' = X·W exactly in fp32, and both quantize better. The 1/s goes where it
costs nothing when it can: into the V columns (weight and bias) of the Attention that produced
X (its output channels are V's, head after head), or into the gamma and beta of a
LayerNormalization / SkipLayerNormalization whose output feeds nothing else; otherwise an
explicit ``Mul`` by the 1/s constant is inserted before the product. Products reading the same
tensor share one s (the weights' row maxima taken over all of them), so one tensor gets one Mul.
``rescale`` does the graph work for any choice of s: AWQ (``awq.py``) searches its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

if TYPE_CHECKING:
    from onnx_lambda.build_model.gate import Feeds

SMOOTHED_OPS = ("MatMul", "Attention")  # a 2-D constant weight [K, N] at input 1
MUL_SUFFIX = ".smooth"  # the inserted Mul nodes' names end with it
_NORMS = {"LayerNormalization": (1, 2), "SkipLayerNormalization": (2, 3)}  # gamma, beta inputs
_TINY = 1e-6  # below this a channel is dead (no activation or no weight): s stays 1


@dataclass
class Smoothing:
    """What ``smooth`` did, for the manifest's quantization report."""

    alpha: float
    nodes: int  # products whose weight rows were scaled
    mul_nodes: int  # Mul nodes inserted (named ``… .smooth``)
    folded: dict[str, int]  # op type → tensors whose 1/s went into that producer instead
    calibration_samples: int

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "nodes": self.nodes, "mul_nodes": self.mul_nodes,
                "folded": self.folded, "calibration_samples": self.calibration_samples}


def smooth(source: Path, target: Path, names: Sequence[str], alpha: float,
           calibration: Sequence[Feeds]) -> Smoothing:
    """Write ``source`` smoothed into ``target``: the nodes ``names`` (the quantizer's candidates)
    that are MatMul / Attention with a constant 2-D float weight, calibrated on ``calibration``
    (feeds of the model's inputs)."""

    def scale(activations: Activations, arrays: list[np.ndarray]) -> np.ndarray:
        row_max = np.max([np.abs(w).max(axis=1) for w in arrays], axis=0)
        live = (activations.maxima > _TINY) & (row_max > _TINY)
        scale = np.ones_like(row_max)
        scale[live] = activations.maxima[live] ** alpha / row_max[live] ** (1 - alpha)
        return scale

    done = rescale(source, target, names, calibration, scale)
    return Smoothing(alpha, done.nodes, done.mul_nodes, done.folded, len(calibration))


@dataclass
class Activations:
    """One product input's calibration statistics, per channel of its last axis."""

    maxima: np.ndarray  # max |value|
    means: np.ndarray  # mean |value|
    rows: np.ndarray  # up to ``ROWS`` of its rows (the last axis), for a search over them


@dataclass
class Rescaled:
    nodes: int  # products whose weight rows were scaled
    mul_nodes: int  # Mul nodes inserted (named ``… .smooth``)
    folded: dict[str, int]  # op type → tensors whose 1/s went into that producer instead


ROWS = 1024  # activation rows kept per tensor for a search (AWQ's)


def rescale(source: Path, target: Path, names: Sequence[str], calibration: Sequence[Feeds],
            scale_of: Callable[[Activations, list[np.ndarray]], np.ndarray],
            adjust: Callable[[np.ndarray, Activations, np.ndarray], np.ndarray] | None = None
            ) -> Rescaled:
    """Write ``source`` into ``target`` with, for each input tensor X of the nodes ``names``
    that are MatMul / Attention with a constant 2-D float weight, ``s = scale_of(X's
    statistics, the weights of the products reading X)``: each weight's rows times s (then
    ``adjust(that weight, X's statistics, s)`` when given), and X / s folded into X's producer
    where exact, else a ``Mul``."""
    model = onnx.load(str(source))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    uses = Counter(name for node in graph.node for name in node.input)
    uses.update(o.name for o in graph.output)
    groups: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        weight = weights.get(node.input[1]) if len(node.input) > 1 else None
        if (node.name in names and node.op_type in SMOOTHED_OPS and weight is not None
                and len(weight.dims) == 2 and weight.data_type == onnx.TensorProto.FLOAT
                and uses[weight.name] == 1 and node.input[0] not in weights):
            groups.setdefault(node.input[0], []).append(node)
    stats = _activations(model, list(groups), calibration)
    producer = {out: node for node in graph.node for out in node.output}
    folded: Counter[str] = Counter()
    muls: dict[str, onnx.NodeProto] = {}  # first reader's name → the Mul to insert before it
    scaled = 0
    for tensor, readers in groups.items():
        arrays = [numpy_helper.to_array(weights[n.input[1]]) for n in readers]
        if tensor not in stats or stats[tensor].maxima.shape[0] != arrays[0].shape[0]:
            continue  # the product contracts another axis than the last: not a plain X·W
        scale = scale_of(stats[tensor], arrays)
        for node, array in zip(readers, arrays, strict=True):
            scaled_weight = array * scale[:, np.newaxis]
            if adjust is not None:
                scaled_weight = adjust(scaled_weight, stats[tensor], scale)
            _store(weights[node.input[1]], scaled_weight)
        scaled += len(readers)
        maker = producer.get(tensor)
        whole = uses[tensor] == len(readers)  # the tensor feeds these products only
        if whole and maker is not None and _fold(maker, tensor, 1 / scale, weights, uses):
            folded[maker.op_type] += 1
            continue
        inverse = f"{tensor}{MUL_SUFFIX}.inverse"
        graph.initializer.append(numpy_helper.from_array((1 / scale).astype(np.float32), inverse))
        out = f"{tensor}{MUL_SUFFIX}"
        muls[readers[0].name] = helper.make_node("Mul", [tensor, inverse], [out],
                                                 name=f"{readers[0].name}{MUL_SUFFIX}")
        for node in readers:
            node.input[0] = out
    nodes = [new for node in graph.node
             for new in ([muls[node.name]] if node.name in muls else []) + [node]]
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, str(target))
    return Rescaled(scaled, len(muls), dict(folded))


def _activations(model: onnx.ModelProto, tensors: list[str],
                 calibration: Sequence[Feeds]) -> dict[str, Activations]:
    """Per last-axis channel, max and mean |value| of each of ``tensors`` over the calibration
    feeds, and up to ``ROWS`` of their rows (the fp32 model, those tensors made outputs)."""
    if not tensors:  # (``run`` with no output names would return every output)
        return {}
    import onnxruntime as ort

    from onnx_lambda.build_model.signature import cpu_session

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    present = {o.name for o in probe.graph.output}
    probe.graph.output.extend(helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None)
                              for t in tensors if t not in present)
    # Basic level: constant folding only, so no fusion swallows a tensor made an output.
    session = cpu_session(probe.SerializeToString(), ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    rows: dict[str, list[np.ndarray]] = {}
    for feeds in calibration:
        for name, value in zip(tensors, session.run(tensors, feeds), strict=True):
            if value.size:  # an empty batch tells nothing
                rows.setdefault(name, []).append(value.reshape(-1, value.shape[-1]))
    found = {}
    for name, parts in rows.items():
        every = np.concatenate(parts)
        magnitude = np.abs(every)
        kept = np.linspace(0, len(every) - 1, min(ROWS, len(every))).astype(int)  # evenly
        found[name] = Activations(magnitude.max(axis=0), magnitude.mean(axis=0), every[kept])
    return found


def _fold(maker: onnx.NodeProto, tensor: str, inverse: np.ndarray,
          weights: dict[str, onnx.TensorProto], uses: Counter[str]) -> bool:
    """Scale ``maker``'s output channels by ``inverse`` inside ``maker``'s own constants, where
    that is exact: an Attention's V projection, a layer norm's gamma and beta. False: not
    possible (the caller inserts a Mul)."""
    if maker.output[0] != tensor or any(uses[o] for o in maker.output[1:]):
        return False  # another output (a present state, a skip sum) is read
    if maker.op_type == "Attention" and maker.domain == "com.microsoft":
        if len(maker.input) < 3 or not _owned(maker.input[1:3], weights, uses):
            return False
        sizes = next((list(a.ints) for a in maker.attribute if a.name == "qkv_hidden_sizes"), [])
        qkv = numpy_helper.to_array(weights[maker.input[1]]).copy()
        bias = numpy_helper.to_array(weights[maker.input[2]]).copy()
        v = sizes[2] if sizes else qkv.shape[1] // 3
        if v != inverse.shape[0]:
            return False
        qkv[:, -v:] *= inverse
        bias[-v:] *= inverse
        _store(weights[maker.input[1]], qkv)
        _store(weights[maker.input[2]], bias)
        return True
    if maker.op_type in _NORMS and maker.domain in ("", "ai.onnx", "com.microsoft"):
        gamma, beta = _NORMS[maker.op_type]
        names = [n for n in maker.input[gamma:beta + 1] if n]
        if len(maker.input) <= gamma or not _owned(names, weights, uses):
            return False
        for name in names:
            _store(weights[name], numpy_helper.to_array(weights[name]) * inverse)
        return True
    return False


def _owned(names: Sequence[str], weights: dict[str, onnx.TensorProto], uses: Counter[str]
           ) -> bool:
    """Every one of ``names`` a float initializer read by one node only."""
    return all(n in weights and uses[n] == 1
               and weights[n].data_type == onnx.TensorProto.FLOAT for n in names)


def _store(tensor: onnx.TensorProto, value: np.ndarray) -> None:
    tensor.CopyFrom(numpy_helper.from_array(value.astype(np.float32), tensor.name))
