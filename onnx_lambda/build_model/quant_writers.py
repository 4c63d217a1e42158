"""How each quantization method writes its model (``quant_methods`` declares the methods and
picks one of these by its record): onnxruntime's quantizers, kept quiet, with the fixes this
project needs (GPTQ's node table, accuracy levels, opsets for per-axis scales)."""

from __future__ import annotations

import contextlib
import io
import logging
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
    if algo == "hqq":  # into the int8-compute kernel's form (integer zero points)
        float_zero_points_apart(result)
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


def sensitive(model: Any, names: Sequence[str]) -> list[str]:
    """Of the MatMul nodes ``names``, the one ``int4 mixed`` keeps in 8-bit blocks: the graph's
    last, a decoder's vocabulary projection, whose error flips the greedy choice directly. On
    SmolLM2-135M (``decoder_build.CHOICE_PROMPTS``) minmax int4 agreed 0.833 with fp32, 0.969
    with this one in 8 bits, 0.953 with every down_proj and the first and last layers too."""
    nodes = [n for n in model.graph.node if n.name in set(names)]
    return [nodes[-1].name] if nodes else []


def mixed(source: Path, target: Path, op_types: Sequence[str], block_size: int,
          symmetric: bool, skip: list[str]) -> None:
    """4-bit ``minmax`` blocks, ``sensitive`` MatMuls in 8-bit blocks, ``skip`` fp32."""
    import onnx

    model = onnx.load(str(source), load_external_data=False)
    ops = tuple(op for op in op_types if op == "MatMul")
    candidates = [n.name for n in model.graph.node if n.op_type in ops and n.name not in skip]
    eight = sensitive(model, candidates)
    stage = target.with_name(f"{target.stem}.int8.onnx")
    nbits(source, stage, ops, "rtn", block_size, symmetric, (), [], bits=8, only=eight)
    minmax(stage, target, ops, block_size, skip)


def minmax(source: Path, target: Path, op_types: Sequence[str], block_size: int,
           skip: Sequence[str]) -> None:
    """4-bit blocks along K from each block's own minimum and maximum, the zero point kept a
    float (``-min / scale``): every block's range is used whole, where round-to-nearest's
    integer zero point moves it by up to half a step. In onnxruntime's fast form through
    ``float_zero_points_apart``. MatMuls whose K is not a multiple of ``block_size``, or whose
    weight is not a 2-D initializer, stay as they are."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    tensors = {t.name: t for t in model.graph.initializer}
    uses: dict[str, int] = {}
    for node in model.graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    nodes = []
    for node in model.graph.node:
        weight = tensors.get(node.input[1]) if len(node.input) > 1 else None
        if (node.op_type not in op_types or node.op_type != "MatMul" or node.name in skip
                or weight is None or len(weight.dims) != 2 or weight.dims[0] % block_size):
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weight).astype(np.float32)
        k, n = w.shape
        blocks = w.T.reshape(n, k // block_size, block_size)
        low, high = blocks.min(-1), blocks.max(-1)
        scale = np.where(high > low, (high - low) / 15, 1.0).astype(np.float32)
        zero = (-low / scale).astype(np.float32)
        q = np.clip(np.round(blocks / scale[..., None] + zero[..., None]), 0, 15).astype(np.uint8)
        stem = f"{weight.name}_minmax"
        model.graph.initializer.extend([
            numpy_helper.from_array(q[..., 0::2] | (q[..., 1::2] << 4), f"{stem}_q4"),
            numpy_helper.from_array(scale.reshape(-1), f"{stem}_scales"),
            numpy_helper.from_array(zero.reshape(-1), f"{stem}_zero_points")])
        nodes.append(helper.make_node(
            "MatMulNBits", [node.input[0], f"{stem}_q4", f"{stem}_scales", f"{stem}_zero_points"],
            list(node.output), name=f"{node.name}_Q4", domain="com.microsoft", K=k, N=n, bits=4,
            block_size=block_size, accuracy_level=ACCURACY_LEVEL))
        uses[weight.name] -= 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    for name, count in uses.items():  # weights no node reads any more
        if count == 0 and name in tensors:
            model.graph.initializer.remove(tensors[name])
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    float_zero_points_apart(model)
    onnx.save(model, str(target))


ZERO_OFFSET = "_zero_offset_matmul"  # the fp32 MatMul float_zero_points_apart adds per node


def float_zero_points_apart(model: Any) -> int:
    """HQQ's blocks in a form onnxruntime's fast MatMulNBits kernel takes, with the same
    meaning. HQQ optimises each block's zero point ``z`` as a float; a float zero point makes
    onnxruntime skip prepacking and dequantize every weight to fp32 on every call
    (``ComputeBUnpacked`` in ``matmul_nbits.cc``: 4-8x slower than its int8-compute kernel).
    Rounding ``z`` loses what HQQ found (measured: agreement 0.67, RTN's), so only its whole
    part stays in the kernel and the fraction moves out, the same weights exactly:
    ``A @ ((q - z) s) = A @ ((q - round(z)) s) - blocksum(A) @ ((z - round(z)) s)``: the
    MatMulNBits keeps ``q``, ``s`` and integer zero points (the fast kernel, blocks centred so
    its int8 activations lose no more than RTN's), and a small fp32 MatMul (K / block_size rows)
    of the activations summed per block subtracts the fractions' part. Returns the nodes
    rewritten."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    tensors = {t.name: t for t in model.graph.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    nodes, changed = [], 0
    for node in model.graph.node:
        zero = tensors.get(node.input[3]) if node.op_type == "MatMulNBits" and len(
            node.input) > 3 else None
        attrs = {a.name: a.i for a in node.attribute}
        if zero is None or zero.data_type == onnx.TensorProto.UINT8 or attrs.get("bits") != 4:
            nodes.append(node)
            continue
        n, size = attrs["N"], attrs["block_size"]
        blocks = -(-attrs["K"] // size)
        scale = numpy_helper.to_array(tensors[node.input[2]]).reshape(n, blocks)
        z = numpy_helper.to_array(zero).reshape(n, blocks).astype(np.float32)
        whole = np.clip(np.round(z), 0, 15)  # the kernel's zero points: centred blocks
        offset = ((z - whole) * scale.astype(np.float32)).T  # [blocks, N], the fraction's part
        stem, a, y = node.name or node.output[0], node.input[0], node.output[0]
        packed = np.concatenate([whole, np.zeros((n, blocks % 2), np.float32)], 1)
        packed = packed.astype(np.uint8)
        zeros = numpy_helper.from_array((packed[:, 0::2] | (packed[:, 1::2] << 4)).reshape(-1),
                                        f"{stem}_zero_points_u4")
        table = numpy_helper.from_array(np.ascontiguousarray(offset), f"{stem}_zero_offset")
        shape = numpy_helper.from_array(np.array([-1, blocks, size], np.int64), f"{stem}_blocks")
        axis = numpy_helper.from_array(np.array([-1], np.int64), f"{stem}_axis")
        model.graph.initializer.extend([zeros, table, shape, axis])
        node.input[3] = zeros.name
        node.output[0] = f"{y}_before_zero_offset"
        # K a multiple of the block size here (onnxruntime's quantizer pads otherwise: skipped)
        nodes += [node,
                  helper.make_node("Reshape", [a, shape.name], [f"{stem}_a_blocks"]),
                  helper.make_node("ReduceSum", [f"{stem}_a_blocks", axis.name],
                                   [f"{stem}_a_sums"], keepdims=0) if opset >= 13 else
                  helper.make_node("ReduceSum", [f"{stem}_a_blocks"], [f"{stem}_a_sums"],
                                   keepdims=0, axes=[-1]),
                  helper.make_node("MatMul", [f"{stem}_a_sums", table.name],
                                   [f"{stem}_zero_part"], name=f"{stem}{ZERO_OFFSET}"),
                  helper.make_node("Shape", [node.output[0]], [f"{stem}_y_shape"]),
                  helper.make_node("Reshape", [f"{stem}_zero_part", f"{stem}_y_shape"],
                                   [f"{stem}_zero_part_shaped"]),
                  helper.make_node("Sub", [node.output[0], f"{stem}_zero_part_shaped"], [y])]
        changed += 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return changed
