"""Step 3 (optional): dynamic INT8 quantization, tuned against the accuracy gate.

Weights are quantized offline, activations at run time (no calibration data needed). Defaults:
per-channel weights, and only MatMuls whose second input is a constant weight (two activations
multiplied together, as in attention scores, lose the most from dynamic quantization).

If the fully quantized model fails the gate, tuning keeps the most sensitive nodes in fp32:
each candidate node is quantized alone and ranked by how much it hurts, then the 1, 2, 4, 8, …
worst are excluded until the gate passes or ``max_fp32_nodes`` (at most every candidate) is
reached: at most one ranking pass plus log2(budget) + 2 attempts, then a clear failure.
``QuantizeResult.counts`` says what the quantized file really holds, node by node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic

from onnx_lambda.build.errors import AccuracyGateError, NothingToQuantizeError
from onnx_lambda.build.gate import Accuracy, Thresholds


@dataclass(frozen=True)
class QuantizeSettings:
    op_types: tuple[str, ...] = ("MatMul", "Attention")
    per_channel: bool = True
    reduce_range: bool = False
    exclude: tuple[str, ...] = ()  # node names kept in fp32 from the first attempt
    max_fp32_nodes: int = 16  # tuning budget; 0 = no tuning


@dataclass
class QuantizeResult:
    accuracy: Accuracy
    excluded: tuple[str, ...]
    attempts: list[tuple[int, Accuracy]] = field(default_factory=list)
    # op type → nodes, as found in the quantized file: {"quantized": {...}, "fp32": {...}}
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def quantized(self) -> int:
        return sum(self.counts.get("quantized", {}).values())


Evaluate = Callable[[Path], Accuracy]


def quantize(source: Path, target: Path, settings: QuantizeSettings,
             exclude: tuple[str, ...] = (), only: tuple[str, ...] | None = None) -> None:
    # The quantizer advises "pre-processing" (shape inference for static quantization) on the
    # root logger at every call; dynamic quantization does not need it.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            source, target,
            op_types_to_quantize=list(settings.op_types),
            per_channel=settings.per_channel,
            reduce_range=settings.reduce_range,
            weight_type=QuantType.QInt8,
            nodes_to_quantize=list(only) if only is not None else None,
            nodes_to_exclude=list(exclude),
            extra_options={"MatMulConstBOnly": True},
        )
    finally:
        root.setLevel(level)


def candidates(model: onnx.ModelProto, op_types: tuple[str, ...]) -> list[str]:
    """Nodes dynamic quantization would touch: the op types asked for, with a constant weight
    (a Gather's table is its first input, a MatMul's weight its second): an initializer, or a
    ``Constant`` node's tensor (``tune`` makes those initializers first)."""
    weights = {init.name for init in model.graph.initializer} | set(_constant_tensors(model))
    return [node.name for node in model.graph.node
            if node.op_type in op_types and node.name and len(node.input) > 1
            and node.input[_weight_index(node)] in weights]


def _weight_index(node: onnx.NodeProto) -> int:
    return 0 if node.op_type == "Gather" else 1


def _constant_tensors(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {node.output[0]: node for node in model.graph.node if node.op_type == "Constant"
            and len(node.attribute) == 1 and node.attribute[0].name == "value"}


def weights_as_initializers(model: onnx.ModelProto, names: list[str]) -> int:
    """Move the ``Constant`` tensors that are the weights of nodes ``names`` into initializers
    (exporters such as paddle2onnx write weights as Constant nodes, which the quantizer does
    not treat as weights). Same graph meaning; returns how many moved."""
    constants = _constant_tensors(model)
    wanted = {node.input[_weight_index(node)] for node in model.graph.node if node.name in names}
    moved = [constants[name] for name in wanted if name in constants]
    for node in moved:
        tensor = onnx.TensorProto()
        tensor.CopyFrom(node.attribute[0].t)
        tensor.name = node.output[0]
        model.graph.initializer.append(tensor)
        model.graph.node.remove(node)
    return len(moved)


def tune(source: Path, target: Path, settings: QuantizeSettings, evaluate: Evaluate,
         limits: Thresholds, on_attempt: Callable[[str], None] = lambda _: None) -> QuantizeResult:
    """Quantize ``source`` into ``target`` so that ``evaluate(target)`` passes ``limits``."""
    model = onnx.load(str(source))
    names = candidates(model, settings.op_types)
    if not names:
        ops = "/".join(settings.op_types)
        present = ", ".join(sorted({n.op_type for n in model.graph.node})[:12])
        raise NothingToQuantizeError(
            f"{source.name}: nothing to quantize: no {ops} node with a constant weight (the "
            f"graph has {present}). Build without --quantize, or name other op types with "
            "--quantize-ops (e.g. Gather for embedding tables).")
    op_of = {node.name: node.op_type for node in model.graph.node}
    if weights_as_initializers(model, names):
        source = target.with_name(f"{target.stem}.weights.onnx")
        onnx.save(model, str(source))
    excluded = tuple(n for n in settings.exclude if n in names)
    attempts: list[tuple[int, Accuracy]] = []

    def attempt(exclude: tuple[str, ...]) -> Accuracy:
        quantize(source, target, settings, exclude)
        accuracy = evaluate(target)
        attempts.append((len(exclude), accuracy))
        on_attempt(f"{len(exclude)} node(s) kept fp32: {accuracy.describe()}")
        return accuracy

    def passed(accuracy: Accuracy, exclude: tuple[str, ...]) -> QuantizeResult:
        return QuantizeResult(accuracy, exclude, attempts, _counts(target, names, op_of))

    accuracy = attempt(excluded)
    if not accuracy.failures(limits):
        return passed(accuracy, excluded)
    budget = min(settings.max_fp32_nodes, len(names))
    if budget > len(excluded):
        ranked = _rank_by_sensitivity(source, target, settings, names, evaluate, on_attempt)
        ranked = [n for n in ranked if n not in excluded]
        for extra in _sizes(budget - len(excluded)):
            trial = excluded + tuple(ranked[:extra])
            accuracy = attempt(trial)
            if not accuracy.failures(limits):
                return passed(accuracy, trial)
    target.unlink(missing_ok=True)
    lines = "\n".join(f"  {kept:3d} node(s) kept fp32: {acc.describe()}" for kept, acc in attempts)
    raise AccuracyGateError(
        f"quantized model fails the accuracy gate ({'; '.join(accuracy.failures(limits))}) "
        f"with up to {budget} of {len(names)} nodes kept in fp32.\n"
        f"Attempts:\n{lines}\nTry a larger --max-fp32-nodes, --quantize-ops MatMul, looser "
        f"--min-cosine/--min-cosine-floor, or build without --quantize.")


def _sizes(budget: int) -> list[int]:
    """1, 2, 4, … up to ``budget``, which is always the last (so the search ends there)."""
    sizes = [1 << i for i in range(budget.bit_length()) if 1 << i < budget]
    return [*sizes, budget] if budget > 0 else []


def _counts(path: Path, names: list[str], op_of: dict[str, str]) -> dict[str, dict[str, int]]:
    """Candidates still present with their op type in the quantized file stayed fp32; the
    others were replaced by quantized operators."""
    kept = {n.name for n in onnx.load(str(path), load_external_data=False).graph.node
            if op_of.get(n.name) == n.op_type}
    counts: dict[str, dict[str, int]] = {"quantized": {}, "fp32": {}}
    for name in names:
        side = counts["fp32" if name in kept else "quantized"]
        side[op_of[name]] = side.get(op_of[name], 0) + 1
    return counts


def _rank_by_sensitivity(source: Path, scratch: Path, settings: QuantizeSettings,
                         names: list[str], evaluate: Evaluate,
                         on_attempt: Callable[[str], None]) -> list[str]:
    """Most harmful first: each node quantized alone, ranked by min then mean cosine."""
    on_attempt(f"ranking {len(names)} nodes by sensitivity")
    scores = {}
    for name in names:
        quantize(source, scratch, settings, only=(name,))
        accuracy = evaluate(scratch)
        scores[name] = accuracy.score()
    return sorted(names, key=lambda n: scores[n])
