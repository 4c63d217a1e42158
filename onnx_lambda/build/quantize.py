"""Step 3 (optional): dynamic INT8 quantization, tuned against the accuracy gate.

Weights are quantized offline, activations at run time (no calibration data needed). Defaults:
per-channel weights, and only MatMuls whose second input is a constant weight (two activations
multiplied together, as in attention scores, lose the most from dynamic quantization).

If the fully quantized model fails the gate, tuning keeps the most sensitive nodes in fp32:
each candidate node is quantized alone and ranked by how much it hurts, then the 1, 2, 4, 8, …
worst are excluded until the gate passes or ``max_fp32_nodes`` is reached.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic

from onnx_lambda.build.errors import AccuracyGateError
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
    (a Gather's table is its first input, a MatMul's weight its second)."""
    weights = {init.name for init in model.graph.initializer}
    return [node.name for node in model.graph.node
            if node.op_type in op_types and node.name and len(node.input) > 1
            and node.input[0 if node.op_type == "Gather" else 1] in weights]


def tune(source: Path, target: Path, settings: QuantizeSettings, evaluate: Evaluate,
         limits: Thresholds, on_attempt: Callable[[str], None] = lambda _: None) -> QuantizeResult:
    """Quantize ``source`` into ``target`` so that ``evaluate(target)`` passes ``limits``."""
    names = candidates(onnx.load(str(source), load_external_data=False), settings.op_types)
    if not names:
        ops = "/".join(settings.op_types)
        raise AccuracyGateError(f"{source.name}: nothing to quantize (no {ops} node with a "
                                "constant weight)")
    excluded = tuple(n for n in settings.exclude if n in names)
    attempts: list[tuple[int, Accuracy]] = []

    def attempt(exclude: tuple[str, ...]) -> Accuracy:
        quantize(source, target, settings, exclude)
        accuracy = evaluate(target)
        attempts.append((len(exclude), accuracy))
        on_attempt(f"{len(exclude)} node(s) kept fp32: {accuracy.describe()}")
        return accuracy

    accuracy = attempt(excluded)
    if not accuracy.failures(limits):
        return QuantizeResult(accuracy, excluded, attempts)
    if settings.max_fp32_nodes > len(excluded):
        ranked = _rank_by_sensitivity(source, target, settings, names, evaluate, on_attempt)
        ranked = [n for n in ranked if n not in excluded]
        count = 1
        while len(excluded) < settings.max_fp32_nodes and ranked:
            extra = min(count, settings.max_fp32_nodes - len(excluded))
            trial = excluded + tuple(ranked[:extra])
            accuracy = attempt(trial)
            if not accuracy.failures(limits):
                return QuantizeResult(accuracy, trial, attempts)
            count *= 2
            if extra >= len(ranked):
                break
    target.unlink(missing_ok=True)
    lines = "\n".join(f"  {kept:3d} node(s) kept fp32: {acc.describe()}" for kept, acc in attempts)
    raise AccuracyGateError(
        f"quantized model fails the accuracy gate ({'; '.join(accuracy.failures(limits))}).\n"
        f"Attempts:\n{lines}\nTry a larger --max-fp32-nodes, --quantize-ops MatMul, looser "
        f"--min-cosine/--min-cosine-floor, or build without --quantize.")


def _rank_by_sensitivity(source: Path, scratch: Path, settings: QuantizeSettings,
                         names: list[str], evaluate: Evaluate,
                         on_attempt: Callable[[str], None]) -> list[str]:
    """Most harmful first: each node quantized alone, ranked by min then mean cosine."""
    on_attempt(f"ranking {len(names)} nodes by sensitivity")
    scores = {}
    for name in names:
        quantize(source, scratch, settings, only=(name,))
        accuracy = evaluate(scratch)
        scores[name] = (accuracy.min_cosine, accuracy.mean_cosine)
    return sorted(names, key=lambda n: scores[n])
