"""Step 3 (optional): quantization by one of the menu's methods (``quant_methods``), tuned
against the accuracy gate.

Default (``int8-dynamic``): weights quantized offline, activations at run time (no calibration
data needed), per-channel weights, and only MatMuls whose second input is a constant weight (two
activations multiplied together, as in attention scores, lose the most from quantization).

Every method goes through the same tuning: if the fully quantized model fails the gate, tuning
keeps the most sensitive nodes in fp32: each candidate node is quantized alone and ranked by how
much it hurts, then the 1, 2, 4, 8, … worst are excluded until the gate passes or
``max_fp32_nodes`` (at most every candidate) is reached: at most one ranking pass plus
log2(budget) + 2 attempts, then a clear failure.
``QuantizeResult.counts`` says what became of each candidate, as read back from the quantized
file, and ``QuantizeResult.graph`` counts every node of that file by precision and op type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import onnx
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

from onnx_lambda.build_model import awq, quant_methods, smooth
from onnx_lambda.build_model.errors import (
    AccuracyGateError,
    BuildError,
    NothingToQuantizeError,
    QuantizeError,
)
from onnx_lambda.build_model.gate import Accuracy, Feeds, Thresholds

BLOCK_SIZE = 32


@dataclass(frozen=True)
class QuantizeSettings:
    method: str = "int8-dynamic"  # one of quant_methods.METHODS (--quantize alone)
    op_types: tuple[str, ...] = ("MatMul", "Attention")
    per_channel: bool = True
    # 7-bit weights for the u8s8 int8 kernels (int8-dynamic/-mixed/-static): x86 CPUs without
    # VNNI (AVX2, AVX-512 before Cascade Lake) add pairs of u8 x s8 products in saturating 16-bit
    # arithmetic (VPMADDUBSW: 255 x 127 x 2 > 32767), VNNI and arm64 do not. With |w| <= 64 no
    # pair can saturate (255 x 64 x 2 = 32640): every CPU computes the same products, so the
    # gate measured on the build machine holds where Lambda runs it (docs/how-to/quantize.md).
    reduce_range: bool = True
    exclude: tuple[str, ...] = ()  # node names kept in fp32 from the first attempt
    max_fp32_nodes: int = 16  # tuning budget; 0 = no tuning
    algo: str = quant_methods.ALGOS[0]  # int4: one of quant_methods.ALGOS
    block_size: int = BLOCK_SIZE  # int4, int8-mixed: weights per block along K (a power of 2 ≥ 16)
    symmetric: bool = False  # int4 rtn, int8-mixed: blocks without a zero point
    keep_fp32_ops: tuple[str, ...] = quant_methods.KEEP_FP32_OPS  # fp16
    smooth: float = 0.0  # SmoothQuant's alpha before quantizing (``smooth``); 0: off

    @property
    def smoothing(self) -> float:
        """The alpha this method smooths with (0: none; fp16 does not, nor int4 awq, whose
        searched scales replace SmoothQuant's)."""
        if not self.record.smooths:
            return 0.0
        return self.smooth

    @property
    def label(self) -> str:
        return quant_methods.label(self.method, self.algo)

    @property
    def record(self) -> quant_methods.Method:
        return quant_methods.record(self.method, self.algo)

    @property
    def supported_ops(self) -> tuple[str, ...]:
        return quant_methods.supported_ops(self.method, self.algo)

    @property
    def name(self) -> str:
        """The label, with what sets this try apart from another of the same method (``auto``'s
        table), where it is not the default: ``int8-mixed (block 128, 4 recorded node(s) left
        out)``."""
        parts = [f"smooth {self.smoothing:g}"] if self.smoothing else []
        if not self.reduce_range and self.record.u8s8:
            parts.append("8-bit weights")
        if self.method in ("int4", "int8-mixed", "int8-weights") and (
                self.block_size, self.symmetric) != (
                BLOCK_SIZE, False):
            parts.append(f"block {self.block_size}{' symmetric' if self.symmetric else ''}")
        if self.exclude:
            parts.append(f"{len(self.exclude)} recorded node(s) "
                         f"{self.record.held.split(' (')[0]}")
        return f"{self.label} ({', '.join(parts)})" if parts else self.label

    def switched(self, method: str, algo: str | None = None) -> QuantizeSettings:
        """These settings for another method (and int4 algorithm)."""
        # An example's fp32 node list was found for its own method: another tunes afresh.
        exclude = self.exclude if quant_methods.same_exclusions(method, self.method) else ()
        return replace(self, method=method, exclude=exclude, algo=algo or self.algo)

    def applied(self) -> dict[str, object]:
        """The settings that shaped this method's result (for the manifest)."""
        blocks = {"block_size": self.block_size, "symmetric": self.symmetric,
                  "accuracy_level": quant_methods.ACCURACY_LEVEL}
        if self.method == "int4":
            return {"algo": self.algo, **blocks}
        if self.method == "fp16":
            return {"keep_fp32_ops": list(self.keep_fp32_ops)}
        weights = {"per_channel": self.per_channel, "reduce_range": self.reduce_range}
        if self.method in ("int8-mixed", "int8-weights"):  # 8-bit blocks
            return {**weights, **blocks} if self.method == "int8-mixed" else blocks
        return weights


@dataclass
class QuantizeResult:
    accuracy: Accuracy
    excluded: tuple[str, ...]
    attempts: list[tuple[int, Accuracy]] = field(default_factory=list)
    # op type → nodes, as found in the quantized file: {"quantized": {...}, "fp32": {...}}
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    fp32: tuple[str, ...] = ()  # the candidates the file still computes in fp32
    # precision ("int8", "int8 (qdq)", "int4", "fp16", "fp32") → op type → nodes, whole graph
    graph: dict[str, dict[str, int]] = field(default_factory=dict)
    smoothing: dict[str, object] | None = None  # smooth.Smoothing.to_dict(), when smoothed
    awq: dict[str, object] | None = None  # awq.Awq.to_dict(), for int4 awq

    @property
    def quantized(self) -> int:
        return sum(self.counts.get("quantized", {}).values())


Evaluate = Callable[[Path], Accuracy]


def quantize(source: Path, target: Path, settings: QuantizeSettings, names: list[str],
             exclude: Sequence[str] = (), only: Sequence[str] | None = None,
             calibration: Sequence[Feeds] = ()) -> None:
    quant_methods.apply(
        settings.method, source, target, op_types=op_types(settings),
        per_channel=settings.per_channel, reduce_range=settings.reduce_range, algo=settings.algo,
        block_size=settings.block_size, symmetric=settings.symmetric,
        keep_fp32_ops=settings.keep_fp32_ops, calibration=calibration, candidates=names,
        exclude=exclude, only=only)


def op_types(settings: QuantizeSettings) -> tuple[str, ...]:
    """The settings' op types this method can quantize."""
    return tuple(op for op in settings.op_types if op in settings.supported_ops)


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
    not treat as weights), and a Conv's / Gemm's bias (static quantization folds a bias that is
    an initializer into its int8 kernel). Same graph meaning; returns how many moved."""
    constants = _constant_tensors(model)
    nodes = [node for node in model.graph.node if node.name in names]
    wanted = {node.input[_weight_index(node)] for node in nodes}
    wanted |= {node.input[2] for node in nodes
               if node.op_type in ("Conv", "Gemm") and len(node.input) > 2}
    moved = [constants[name] for name in wanted if name in constants]
    for node in moved:
        tensor = onnx.TensorProto()
        tensor.CopyFrom(node.attribute[0].t)
        tensor.name = node.output[0]
        model.graph.initializer.append(tensor)
        model.graph.node.remove(node)
    return len(moved)


def tune(source: Path, target: Path, settings: QuantizeSettings, evaluate: Evaluate,
         limits: Thresholds, on_attempt: Callable[[str], None] = lambda _: None,
         calibration: Sequence[Feeds] = ()) -> QuantizeResult:
    """Quantize ``source`` into ``target`` so that ``evaluate(target)`` passes ``limits``;
    ``calibration``: the feeds int8-static and int4 gptq calibrate on."""
    model = onnx.load(str(source))
    unnamed = [node for node in model.graph.node if not node.name]
    for index, node in enumerate(unnamed):  # exclusions and counts go by node name
        node.name = f"{node.op_type}.unnamed.{index}"
    ops = op_types(settings)
    names = candidates(model, ops)
    if not names:
        wanted = "/".join(ops) or "/".join(settings.op_types)
        supported = ", ".join(settings.supported_ops)
        present = ", ".join(sorted({n.op_type for n in model.graph.node})[:12])
        raise NothingToQuantizeError(
            f"{source.name}: nothing to quantize with {settings.label}: no {wanted} node with a "
            f"constant weight (the graph has {present}; {settings.label} quantizes "
            f"{supported}). Build without --quantize, or name other op types with "
            "--quantize-ops (e.g. Gather for embedding tables).")
    op_of = {node.name: node.op_type for node in model.graph.node}
    if weights_as_initializers(model, names) or unnamed:
        source = target.with_name(f"{target.stem}.weights.onnx")
        onnx.save(model, str(source))
    excluded = tuple(n for n in settings.exclude if n in names)
    held = settings.record.held
    inputs = {i.name for i in model.graph.input}  # the calibration readers feed these only
    calibration = [{k: v for k, v in feeds.items() if k in inputs} for feeds in calibration]
    smoothing = None
    if settings.smoothing:  # once: every attempt below quantizes the same smoothed graph
        smoothed = target.with_name(f"{target.stem}.smoothed.onnx")
        try:
            smoothing = smooth.smooth(source, smoothed, names, settings.smoothing,
                                      calibration).to_dict()
        except Exception as exc:  # onnxruntime refusing the calibration run, an odd graph
            raise QuantizeError(f"--smooth cannot smooth this model ({type(exc).__name__}: "
                                f"{str(exc)[:300]}); build without --smooth.") from exc
        source = smoothed
    scaled = None
    if settings.label == "int4 awq":  # once, like smoothing: the attempts quantize it with rtn
        rescaled = target.with_name(f"{target.stem}.awq.onnx")
        try:
            scaled = awq.scale(source, rescaled, names, calibration, settings.block_size,
                               settings.symmetric).to_dict()
        except Exception as exc:  # onnxruntime refusing the calibration run, an odd graph
            raise QuantizeError(f"int4 awq cannot rescale this model ({type(exc).__name__}: "
                                f"{str(exc)[:300]}); try --algo rtn.") from exc
        source = rescaled
    attempts: list[tuple[int, Accuracy]] = []

    def run(path: Path, exclude: Sequence[str] = (), only: Sequence[str] | None = None
            ) -> Accuracy:
        try:
            quantize(source, path, settings, names, exclude, only, calibration)
        except BuildError:
            raise
        except Exception as exc:  # a third-party quantizer's own refusal (NotImplemented, assert)
            raise QuantizeError(f"{settings.label} cannot quantize this model "
                                f"({type(exc).__name__}: {str(exc)[:300]}); try another "
                                "--quantize method, or build without --quantize.") from exc
        try:
            return evaluate(path)
        except (ort_errors.Fail, ort_errors.InvalidGraph, ort_errors.InvalidArgument,
                ort_errors.NotImplemented, ort_errors.RuntimeException) as exc:
            path.unlink(missing_ok=True)
            raise QuantizeError(f"{settings.label} wrote a model onnxruntime cannot run here "
                                f"({str(exc).splitlines()[0][:300]}); try another --quantize "
                                "method, or build without --quantize.") from exc

    def attempt(exclude: tuple[str, ...]) -> Accuracy:
        accuracy = run(target, exclude)
        attempts.append((len(exclude), accuracy))
        on_attempt(f"{len(exclude)} node(s) {held}: {accuracy.describe()}")
        return accuracy

    def passed(accuracy: Accuracy, exclude: tuple[str, ...]) -> QuantizeResult:
        table = precisions(onnx.load(str(target), load_external_data=False))
        fp32 = tuple(n for n in names if table.get(n) == (op_of[n], "fp32"))
        return QuantizeResult(accuracy, exclude, attempts, _counts(fp32, names, op_of),
                              fp32, tally(table), smoothing, scaled)

    accuracy = attempt(excluded)
    if not accuracy.failures(limits):
        return passed(accuracy, excluded)
    budget = min(settings.max_fp32_nodes, len(names))
    if budget > len(excluded):
        on_attempt(f"ranking {len(names)} nodes by sensitivity")
        # Most harmful first: each node quantized alone, ranked by min then mean cosine.
        scores = {name: run(target, only=(name,)).score() for name in names}
        ranked = [n for n in sorted(names, key=lambda n: scores[n]) if n not in excluded]
        for extra in _sizes(budget - len(excluded)):
            trial = excluded + tuple(ranked[:extra])
            accuracy = attempt(trial)
            if not accuracy.failures(limits):
                return passed(accuracy, trial)
    target.unlink(missing_ok=True)
    lines = "\n".join(f"  {kept:3d} node(s) {held}: {acc.describe()}" for kept, acc in attempts)
    raise AccuracyGateError(
        f"{settings.label} fails the accuracy gate ({'; '.join(accuracy.failures(limits))}) "
        f"with up to {budget} of {len(names)} nodes {held}.\n"
        f"Attempts:\n{lines}\nTry another --quantize method, a larger --max-fp32-nodes, "
        "--quantize-ops MatMul, looser --min-cosine/--min-cosine-floor, or build without "
        "--quantize.")


def _sizes(budget: int) -> list[int]:
    """1, 2, 4, … up to ``budget``, which is always the last (so the search ends there)."""
    sizes = [1 << i for i in range(budget.bit_length()) if 1 << i < budget]
    return [*sizes, budget] if budget > 0 else []


def _counts(fp32: tuple[str, ...], names: list[str], op_of: dict[str, str]
            ) -> dict[str, dict[str, int]]:
    """``fp32``: the candidates still in the file under their name and op type, computing in
    fp32; the others were replaced by quantized operators or now compute quantized."""
    counts: dict[str, dict[str, int]] = {"quantized": {}, "fp32": {}}
    for name in names:
        side = counts["fp32" if name in fp32 else "quantized"]
        side[op_of[name]] = side.get(op_of[name], 0) + 1
    return counts


_INT8_OPS = {"MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul", "DynamicQuantizeLinear",
             "QAttention", "QGemm", "QLinearMatMul", "QLinearConv", "QLinearAdd", "QLinearMul",
             "DynamicQuantizeLSTM", "QEmbedLayerNormalization"}
_QDQ_OPS = {"QuantizeLinear", "DequantizeLinear"}
_BLOCK_OPS = {"MatMulNBits", "GatherBlockQuantized"}


def precisions(model: onnx.ModelProto) -> dict[str, tuple[str, str]]:
    """Every node of ``model`` (by name) → (op type, the precision it computes in): int8
    (quantized operators), int8 (qdq) (fed by a DequantizeLinear: onnxruntime fuses the pair
    into an int8 kernel where it has one), intN (block-quantized weights), int8 also for a
    node reading an int8 initializer (dynamic quantization's Gather), fp16 (touches a float16
    tensor), fp32 (the rest)."""
    fp16 = {t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16}
    # A Gather on a quantized table reads int8 weights directly (a DequantizeLinear follows).
    int8 = {t.name for t in model.graph.initializer
            if t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)}
    dequantized: set[str] = set()
    table: dict[str, tuple[str, str]] = {}
    for index, node in enumerate(model.graph.node):
        if node.op_type in _BLOCK_OPS:  # packed uint8 blocks: checked before int8 tables
            bits = next((a.i for a in node.attribute if a.name == "bits"), 4)
            precision = f"int{bits}"
        elif node.op_type in _INT8_OPS or (node.op_type not in _QDQ_OPS
                                           and int8.intersection(node.input)):
            precision = "int8"
        elif node.op_type in _QDQ_OPS or dequantized.intersection(node.input):
            precision = "int8 (qdq)"
        elif node.op_type == "Cast":
            to_half = any(a.name == "to" and a.i == onnx.TensorProto.FLOAT16
                          for a in node.attribute)
            precision = "fp16" if to_half else "fp32"
            if to_half:
                fp16.update(node.output)
        elif fp16.intersection(node.input):
            precision = "fp16"
            fp16.update(node.output)
        else:
            precision = "fp32"
        if node.op_type == "DequantizeLinear":
            dequantized.update(node.output)
        table[node.name or f"#{index}"] = (node.op_type, precision)
    return table


def tally(table: dict[str, tuple[str, str]]) -> dict[str, dict[str, int]]:
    """``precisions``' table as precision → op type → node count."""
    counts: dict[str, dict[str, int]] = {}
    for op_type, precision in table.values():
        ops = counts.setdefault(precision, {})
        ops[op_type] = ops.get(op_type, 0) + 1
    return counts
