"""The quantization menu: one ``apply`` per method, each writing ``target`` from ``source`` with
some candidate nodes kept in fp32 (``exclude``) or only some quantized (``only``, for ranking).

- ``int8-dynamic``: weights int8 offline, activations quantized at run time (no calibration).
- ``int8-static``: QDQ int8 weights and activations, activation ranges calibrated (min/max) on
  the build's samples plus ``--calibration FILE``; onnxruntime fuses the QDQ pairs at load.
- ``int4``: weight-only, ``MatMulNBits`` blocks of ``block_size`` along K; ``--algo`` rtn
  (round to nearest, min/max per block), hqq (half-quadratic, no data), gptq (Hessian-aware,
  calibrated like static) or awq (rtn on a graph rescaled by searched activation-aware scales,
  ``awq.py``, calibrated). Compute in int8 (``accuracy_level`` 4: activations quantized per
  block at run time), the fastest MatMulNBits path on x86 and arm64.
- ``int8-mixed``: ``int8-dynamic`` where the gate allows; the MatMuls it must leave out
  (``exclude``, what tuning finds) get 8-bit weight-only blocks instead of fp32 (``MatMulNBits``,
  ``block_size`` along K, int8 compute per block, so no per-tensor activation range): a quarter
  of their fp32 size at nearly fp32 accuracy. Other left-out nodes stay fp32.
- ``fp16``: weights and compute in float16 with fp32 inputs/outputs, sensitive ops (``
  KEEP_FP32_OPS``) and ``exclude`` kept in fp32. On a CPU without fp16 kernels onnxruntime runs
  them through inserted casts: the gate still holds, the latency figure tells.

Any method but fp16 may smooth first (``--smooth ALPHA``, ``smooth.py``): the graph it quantizes
is then the SmoothQuant-rescaled one, exact in fp32.
"""

from __future__ import annotations

import contextlib
import io
import logging
import platform
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI reads METHODS/ALGOS at start-up: the quantizers load on use only
    from onnx_lambda.build_model.gate import Feeds

METHODS = ("int8-dynamic", "int8-static", "int4", "fp16", "int8-mixed")
ALGOS = ("rtn", "hqq", "gptq", "awq")  # int4; the first is the default
# The methods ``--smooth`` applies to (smooth.py: it helps integer activations and weights).
SMOOTHED = ("int8-dynamic", "int8-mixed", "int8-static", "int4")
# The methods whose int8 weights meet u8 activations in onnxruntime's u8s8 kernels (7-bit weights
# by default: ``QuantizeSettings.reduce_range``).
U8S8 = ("int8-dynamic", "int8-mixed", "int8-static")
# The methods (labels, see ``label``) that calibrate on the build's samples and --calibration.
CALIBRATED = ("int8-static", "int4 gptq", "int4 awq")
# What each method (or "int4 ALGO") can quantize: the settings' op types are intersected with it.
_DYNAMIC_OPS = ("MatMul", "Attention", "Gather", "Gemm", "Conv", "LSTM")
SUPPORTED_OPS = {
    "int8-dynamic": _DYNAMIC_OPS,
    "int8-mixed": _DYNAMIC_OPS,
    "int8-static": ("MatMul", "Attention", "Gather", "Gemm", "Conv", "Add", "Mul", "Relu"),
    # Gather (GatherBlockQuantized) with rtn only, and awq (rtn after rescaling the MatMuls)
    "int4": ("MatMul", "Gather"),
    "int4 hqq": ("MatMul",),
    "int4 gptq": ("MatMul",),
    "fp16": ("MatMul", "Attention", "Gather", "Gemm", "Conv"),
}
# fp16 keeps these in fp32: reductions and normalisations overflow or lose the most in float16.
KEEP_FP32_OPS = ("LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
                 "Softmax", "ReduceMean", "ReduceSum", "Pow", "Sqrt", "Erf", "Exp", "Div",
                 "TopK", "ArgMax")
ACCURACY_LEVEL = 4  # MatMulNBits: int8 compute


def label(method: str, algo: str | None = None) -> str:
    """How a method is named in reports and tables: ``int4 ALGO`` for int4, else the method."""
    return f"int4 {algo or ALGOS[0]}" if method == "int4" else method


def same_exclusions(method: str, other: str) -> bool:
    """Whether a node list tuning found for one method serves the other (int8-mixed leaves out
    what int8-dynamic cannot quantize)."""
    return method == other or {method, other} == {"int8-dynamic", "int8-mixed"}


def held(method: str) -> str:
    """What becomes of the nodes tuning leaves out of ``method``."""
    return "left out (MatMuls: 8-bit blocks)" if method == "int8-mixed" else "kept fp32"


def supported_ops(method: str, algo: str | None = None) -> tuple[str, ...]:
    """The op types a method (and int4 algorithm) can quantize."""
    return SUPPORTED_OPS.get(label(method, algo), SUPPORTED_OPS[method])


def missing_package(method: str, algo: str | None = None) -> str | None:
    """The package a method needs that is not installed (onnxruntime's HQQ computes in torch)."""
    import importlib.util

    if label(method, algo) == "int4 hqq" and importlib.util.find_spec("torch") is None:
        return "torch"
    return None


# The instruction-set features the int8 / int4 / fp16 kernels choose their paths by.
_ISA = ("avx2", "f16c", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
        "amx_int8", "asimddp", "asimdhp", "fphp", "i8mm", "sve", "bf16")


def cpu() -> dict[str, Any]:
    """The build machine's CPU as the kernels see it (Linux ``/proc/cpuinfo`` flags): what a
    quantized artifact's measured figures hold for. Another CPU may pick other kernels."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    flags = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.partition(":")[2].split())
    return {"machine": platform.machine(), "isa": [f for f in _ISA if f in flags]}


def samples(feeds: Sequence[Feeds]) -> Any:
    """The calibration feeds (already restricted to the model's inputs) as a restartable
    reader: GPTQ deep-copies its reader and iterates it, quantize_static calls ``get_next``."""
    from onnxruntime.quantization import CalibrationDataReader

    class Samples(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = list(feeds)
            self.position = 0

        def get_next(self) -> Feeds | None:
            if self.position >= len(self.feeds):
                return None
            self.position += 1
            return self.feeds[self.position - 1]

        def rewind(self) -> None:
            self.position = 0

        def __iter__(self) -> Iterator[Feeds]:
            return iter(self.feeds)

    return Samples()


@contextmanager
def _quiet() -> Iterator[None]:
    """The quantizers log advice ("pre-processing", opset upgrades) on the root logger per call,
    and ``matmul_nbits_quantizer`` runs ``logging.basicConfig(level=INFO)`` when imported:
    imported here first, its handler and level are undone afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    import onnxruntime.quantization.matmul_nbits_quantizer  # noqa: F401

    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():  # HQQ's torch.from_numpy on a read-only weight
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        root.setLevel(level)
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)


def apply(method: str, source: Path, target: Path, *, op_types: Sequence[str],
          per_channel: bool, reduce_range: bool, algo: str, block_size: int, symmetric: bool,
          keep_fp32_ops: Sequence[str], calibration: Sequence[Feeds], candidates: list[str],
          exclude: Sequence[str] = (), only: Sequence[str] | None = None) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    skip = list(exclude) if only is None else [n for n in candidates if n not in only]
    with _quiet():
        if method in ("int8-dynamic", "int8-mixed"):
            mixed = method == "int8-mixed"
            dynamic = target.with_name(f"{target.stem}.dynamic.onnx") if mixed else target
            quantize_dynamic(source, dynamic, op_types_to_quantize=list(op_types),
                             per_channel=per_channel, reduce_range=reduce_range,
                             weight_type=QuantType.QInt8, nodes_to_exclude=skip,
                             extra_options={"MatMulConstBOnly": True})
            if mixed:
                _nbits(dynamic, target, ("MatMul",), "rtn", block_size, symmetric, (), [],
                       bits=8, only=skip)
        elif method == "int8-static":
            _static(source, target, op_types, per_channel, reduce_range, calibration, skip)
        elif method == "int4":
            _nbits(source, target, op_types, algo, block_size, symmetric, calibration, skip)
        elif method == "fp16":
            _fp16(source, target, keep_fp32_ops, skip)
        else:
            raise ValueError(f"unknown quantization method {method!r}")


def _static(source: Path, target: Path, op_types: Sequence[str], per_channel: bool,
            reduce_range: bool, calibration: Sequence[Feeds], skip: list[str]) -> None:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    # U8 activations, S8 weights: the combination onnxruntime's x86 int8 kernels are built for.
    # The ranges depend on the source and the op types only, not on the nodes excluded: tuning's
    # attempts on one source (a fresh build folder) calibrate once and reuse the cache.
    cache = target.parent / f"{source.stem}.calibration.json"
    if per_channel:
        source = _opset_for_axis(source, target)
    quantize_static(source, target, samples(calibration),
                    quant_format=QuantFormat.QDQ, op_types_to_quantize=list(op_types),
                    per_channel=per_channel, reduce_range=reduce_range,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    nodes_to_exclude=skip, calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"MatMulConstBOnly": True}, calibration_cache_path=cache)


PER_AXIS_OPSET = 13  # DequantizeLinear's ``axis`` (per-channel scales) arrived in opset 13


def _opset_for_axis(source: Path, target: Path) -> Path:
    """``source`` at ai.onnx opset 13 or later: per-channel QDQ writes ``DequantizeLinear`` with
    an ``axis``, which an older opset's checker refuses (``INVALID_GRAPH: Unrecognized attribute:
    axis``; paddle2onnx writes opset 12, quantize_static only lifts a graph to 11). Converted
    with onnx's version converter (same meaning) beside ``target``; ``source`` when already 13."""
    import onnx
    from onnx import version_converter

    model = onnx.load(str(source))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset >= PER_AXIS_OPSET:
        return source
    converted = target.with_name(f"{source.stem}.opset{PER_AXIS_OPSET}.onnx")
    if not converted.exists():  # tuning's attempts share one conversion
        onnx.save(version_converter.convert_version(model, PER_AXIS_OPSET), str(converted))
    return converted


def _nbits_class() -> Any:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    class NBits(MatMulNBitsQuantizer):
        """GPTQ's node table ignores ``nodes_to_exclude``: mark those nodes "fp32" in it (what
        its RTN path does, and what GPTQ itself honours)."""

        def _generate_q4_node_config(self) -> dict:
            config = super()._generate_q4_node_config()
            return {**config, **{name: "fp32" for name in self.nodes_to_exclude}}

    return NBits


def _nbits(source: Path, target: Path, op_types: Sequence[str], algo: str, block_size: int,
           symmetric: bool, calibration: Sequence[Feeds], skip: list[str], bits: int = 4,
           only: Sequence[str] | None = None) -> None:
    """Weight-only blocks of ``bits``, ``skip`` left out; ``only``: these nodes alone."""
    import onnx
    from onnxruntime.quantization import matmul_nbits_quantizer as nbits

    model = onnx.load(str(source))
    ops = tuple(op_types)
    if only is not None:
        skip = [n.name for n in model.graph.node if n.op_type in ops and n.name not in only]
    if algo == "hqq":
        if missing_package("int4", algo):
            from onnx_lambda.build_model.errors import BuildError

            raise BuildError("int4 --algo hqq needs torch: pip install -e '.[examples]' "
                             "(or use --algo rtn / gptq)")
        config: nbits.WeightOnlyQuantConfig = nbits.HQQWeightOnlyQuantConfig(
            block_size=block_size, op_types_to_quantize=ops)
    elif algo == "gptq":
        config = nbits.GPTQWeightOnlyQuantConfig(
            calibration_data_reader=samples(calibration),
            block_size=block_size, op_types_to_quantize=ops)
    else:  # rtn, and awq's rescaled graph: onnxruntime's blockwise min/max round-to-nearest
        config = nbits.DefaultWeightOnlyQuantConfig(
            block_size=block_size, is_symmetric=symmetric, accuracy_level=ACCURACY_LEVEL,
            op_types_to_quantize=ops, bits=bits)
    quantizer = _nbits_class()(
        model, bits=bits, block_size=block_size, is_symmetric=symmetric,
        accuracy_level=ACCURACY_LEVEL, nodes_to_exclude=skip, op_types_to_quantize=ops,
        algo_config=config)
    with contextlib.redirect_stdout(io.StringIO()):  # GPTQ prints a progress bar
        quantizer.process()
    result = quantizer.model.model
    for node in result.graph.node:  # HQQ and GPTQ do not take the accuracy level themselves
        if node.op_type == "MatMulNBits" and not any(a.name == "accuracy_level"
                                                      for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("accuracy_level", ACCURACY_LEVEL))
    onnx.save(result, str(target))


def _fp16(source: Path, target: Path, keep_fp32_ops: Sequence[str], skip: list[str]) -> None:
    import onnx
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

    # The pipeline math build-model appends comes later, onto the result: it stays fp32 (its
    # tiny clip constants, 1e-9 and 1e-12, would vanish in float16).
    model = convert_float_to_float16(
        onnx.load(str(source)), keep_io_types=True,
        op_block_list=sorted({*DEFAULT_OP_BLOCK_LIST, *keep_fp32_ops}), node_block_list=skip)
    onnx.save(model, str(target))
