"""How each quantization method writes its model (``quant_methods`` declares the methods and
picks one of these by its record): onnxruntime's quantizers, kept quiet, with the fixes this
project needs (GPTQ's node table, accuracy levels, opsets for per-axis scales)."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onnx_lambda.build_model.gate import Feeds

ACCURACY_LEVEL = 4  # MatMulNBits: int8 compute (activations quantized per block of a row)


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
def quiet() -> Iterator[None]:
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


def dynamic(source: Path, target: Path, op_types: Sequence[str], per_channel: bool,
            reduce_range: bool, skip: list[str]) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(source, target, op_types_to_quantize=list(op_types),
                     per_channel=per_channel, reduce_range=reduce_range,
                     weight_type=QuantType.QInt8, nodes_to_exclude=skip,
                     extra_options={"MatMulConstBOnly": True})


def static(source: Path, target: Path, op_types: Sequence[str], per_channel: bool,
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


def nbits(source: Path, target: Path, op_types: Sequence[str], algo: str, block_size: int,
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
        import importlib.util

        if importlib.util.find_spec("torch") is None:
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
    if algo == "hqq":  # into the int8-compute kernel's form (uint8 zero points)
        integer_zero_points(result)
    for node in result.graph.node:  # HQQ and GPTQ do not take the accuracy level themselves
        if node.op_type == "MatMulNBits" and not any(a.name == "accuracy_level"
                                                      for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("accuracy_level", ACCURACY_LEVEL))
    onnx.save(result, str(target))


def fp16(source: Path, target: Path, keep_fp32_ops: Sequence[str], skip: list[str]) -> None:
    import onnx
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

    # The pipeline math build-model appends comes later, onto the result: it stays fp32 (its
    # tiny clip constants, 1e-9 and 1e-12, would vanish in float16).
    model = convert_float_to_float16(
        onnx.load(str(source)), keep_io_types=True,
        op_block_list=sorted({*DEFAULT_OP_BLOCK_LIST, *keep_fp32_ops}), node_block_list=skip)
    onnx.save(model, str(target))


# int4 mixed: the projections whose 4-bit error hurts a decoder most, kept in 8-bit blocks: the
# MLP's output projection (it adds into the residual stream what the widest activations made),
# the vocabulary projection (its error flips the argmax directly), and the first and last
# layers (the first feeds every later one, the last has no later layer to absorb it). Matched
# on the node's or its weight's name (onnxruntime-genai: /model/layers.N/mlp/down_proj/MatMul;
# transformers exports: model.layers.N.mlp.down_proj.weight).
SENSITIVE = ("down_proj", "lm_head", "fc2", "wo")
_LAYER = re.compile(r"layers?[./_](\d+)[./_]")


def sensitive(model: Any, names: Sequence[str]) -> list[str]:
    """Of the MatMul nodes ``names``, those ``int4 mixed`` keeps in 8 bits (``SENSITIVE``, the
    first and last layers, and the graph's last MatMul, the vocabulary projection)."""
    nodes = [n for n in model.graph.node if n.name in set(names)]
    if not nodes:
        return []

    def text(node: Any) -> str:
        return f"{node.name} {node.input[1] if len(node.input) > 1 else ''}"

    layers = {n.name: int(m.group(1)) for n in nodes if (m := _LAYER.search(text(n)))}
    edges = {min(layers.values()), max(layers.values())} if layers else set()
    picked = {n.name for n in nodes if any(s in text(n) for s in SENSITIVE)
              or layers.get(n.name, -1) in edges}
    picked.add(nodes[-1].name)
    return [n.name for n in nodes if n.name in picked]


def mixed(source: Path, target: Path, op_types: Sequence[str], block_size: int,
          symmetric: bool, skip: list[str]) -> None:
    """4-bit round-to-nearest blocks, ``sensitive`` MatMuls in 8-bit blocks, ``skip`` fp32."""
    import onnx

    model = onnx.load(str(source), load_external_data=False)
    ops = tuple(op for op in op_types if op == "MatMul")
    candidates = [n.name for n in model.graph.node if n.op_type in ops and n.name not in skip]
    eight = sensitive(model, candidates)
    stage = target.with_name(f"{target.stem}.int4.onnx")
    nbits(source, stage, ops, "rtn", block_size, symmetric, (), [*skip, *eight])
    nbits(stage, target, ops, "rtn", block_size, symmetric, (), [], bits=8, only=eight)


def integer_zero_points(model: Any) -> int:
    """HQQ's blocks in the form onnxruntime's fast MatMulNBits kernel takes. HQQ optimises each
    block's zero point as a float; a float zero point makes onnxruntime skip prepacking and
    dequantize every weight to fp32 on every call (``ComputeBUnpacked``, 4-8x slower than the
    int8-compute kernel). Each zero point is rounded to an integer, the block re-quantized to
    HQQ's own dequantized weights, and its scale refit by least squares. Returns the nodes
    rewritten."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    tensors = {t.name: t for t in model.graph.initializer}
    changed = 0
    for node in model.graph.node:
        if node.op_type != "MatMulNBits" or len(node.input) < 4 or not node.input[3]:
            continue
        zero = tensors[node.input[3]]
        attrs = {a.name: a.i for a in node.attribute}
        if zero.data_type == onnx.TensorProto.UINT8 or attrs.get("bits", 4) != 4:
            continue
        n, blocks, size = attrs["N"], -(-attrs["K"] // attrs["block_size"]), attrs["block_size"]
        packed = numpy_helper.to_array(tensors[node.input[1]]).reshape(n, blocks, size // 2)
        q = np.empty((n, blocks, size), np.float32)
        q[..., 0::2], q[..., 1::2] = packed & 0x0F, packed >> 4
        scale = numpy_helper.to_array(tensors[node.input[2]]).reshape(n, blocks).astype(np.float32)
        z = numpy_helper.to_array(zero).reshape(n, blocks).astype(np.float32)
        weights = (q - z[..., None]) * scale[..., None]  # what HQQ's blocks mean
        z = np.clip(np.round(z), 0, 15)
        for _ in range(2):  # requantize on the integer zero point, then the best scale for it
            safe = np.where(scale == 0, 1.0, scale)[..., None]
            q = np.clip(np.round(weights / safe + z[..., None]), 0, 15)
            d = q - z[..., None]
            norm = (d * d).sum(-1)
            scale = np.where(norm > 0, (weights * d).sum(-1) / np.where(norm > 0, norm, 1), scale)
        q8 = q.astype(np.uint8)
        tensors[node.input[1]].CopyFrom(numpy_helper.from_array(
            (q8[..., 0::2] | (q8[..., 1::2] << 4)).astype(np.uint8), node.input[1]))
        tensors[node.input[2]].CopyFrom(numpy_helper.from_array(
            scale.reshape(-1).astype(numpy_helper.to_array(tensors[node.input[2]]).dtype),
            node.input[2]))
        zu = np.concatenate([z, np.zeros((n, blocks % 2), np.float32)], 1).astype(np.uint8)
        tensors[node.input[3]].CopyFrom(numpy_helper.from_array(
            (zu[:, 0::2] | (zu[:, 1::2] << 4)).reshape(-1), node.input[3]))
        changed += 1
    return changed
