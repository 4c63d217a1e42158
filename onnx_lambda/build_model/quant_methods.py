"""The quantization menu: one declared record per method (``Method``), which everything else reads
— the CLI's ``--quantize`` / ``--algo`` choices and help, ``auto``'s tries and their order, the
decoder build's choices, what calibrates, which pipelines a method may be the default for.
Adding a method is one record here (and its writer in ``quant_writers`` when none fits) plus
its tests.

- ``int8-dynamic``: weights int8 offline, activations quantized at run time with one scale per
  tensor, across the whole batch (``DynamicQuantizeLinear`` → ``MatMulInteger``): an item's
  answer depends on its batch neighbours (``batch_invariant``), so it is a default only for the
  pipelines that then run each item alone (``handler.manifest.RUNS_ALONE``, ``item_by_item``).
- ``int8-mixed``: ``int8-dynamic`` where the gate allows, the left-out MatMuls in 8-bit weight
  blocks (batch-dependent like int8-dynamic).
- ``int8-static``: QDQ int8 weights and activations, ranges calibrated (min/max) on the
  calibration split plus ``--calibration FILE``; fixed scales, so batch invariant.
- ``int8-weights``: 8-bit weight-only blocks (``MatMulNBits`` bits 8, ``block_size`` along K);
  at accuracy level 4 the activations are quantized per block of one row, so an item's answer
  does not depend on its neighbours. The safe middle for decoders.
- ``int4 ALGO``: weight-only 4-bit blocks: rtn (round to nearest), hqq (half-quadratic; its
  float zero points put in the form onnxruntime's int8-compute kernel takes,
  ``quant_writers.float_zero_points_apart``), gptq (Hessian-aware, calibrated), awq (rtn on a graph
  rescaled by searched activation-aware scales, calibrated), minmax (each block's own range,
  float zero points, ``quant_writers.minmax``), mixed (minmax, the vocabulary projection in
  8-bit blocks: ``quant_writers.sensitive``).
- ``fp16``: weights and compute in float16 with fp32 inputs/outputs, ``KEEP_FP32_OPS`` in fp32.

Any method with ``smooths`` may smooth first (``--smooth ALPHA``, ``smooth.py``).
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handler.manifest import RUNS_ALONE
from onnx_lambda.build_model import quant_writers as writers

if TYPE_CHECKING:  # the CLI reads the records at start-up: the quantizers load on use only
    from onnx_lambda.build_model.gate import Feeds

# fp16 keeps these in fp32: reductions and normalisations overflow or lose the most in float16.
KEEP_FP32_OPS = ("LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
                 "Softmax", "ReduceMean", "ReduceSum", "Pow", "Sqrt", "Erf", "Exp", "Div",
                 "TopK", "ArgMax")
ACCURACY_LEVEL = writers.ACCURACY_LEVEL
_DYNAMIC_OPS = ("MatMul", "Attention", "Gather", "Gemm", "Conv", "LSTM")


@dataclass(frozen=True)
class Job:
    """What a writer gets: ``skip`` the candidate nodes left out (or, for ranking, all but
    ``only``)."""

    source: Path
    target: Path
    op_types: tuple[str, ...]
    per_channel: bool
    reduce_range: bool
    block_size: int
    symmetric: bool
    keep_fp32_ops: tuple[str, ...]
    calibration: Sequence[Feeds]
    skip: list[str]


@dataclass(frozen=True)
class Method:
    method: str  # --quantize's value
    algo: str | None  # int4's --algo (None: the method has none)
    summary: str  # one line for the CLI's help
    ops: tuple[str, ...]  # the op types it can quantize (the settings' are intersected)
    write: Callable[[Job], None]
    calibrates: bool = False  # reads the calibration split (and --calibration)
    smooths: bool = False  # --smooth applies
    u8s8: bool = False  # int8 weights meet u8 activations (reduce_range matters)
    batch_invariant: bool = True  # an item's answer does not depend on its batch neighbours
    decoder: bool = False  # the decoder build takes it (weight-only, no feeds to calibrate)
    needs: str | None = None  # a package it imports
    held: str = "kept fp32"  # what becomes of the nodes tuning leaves out
    latency: int | None = None  # its place in auto's tries, per objective (None: not tried)
    size: int | None = None

    @property
    def label(self) -> str:
        return f"{self.method} {self.algo}" if self.algo else self.method

    def serves(self, pipeline: str) -> bool:
        """Whether it may be a default (``auto``'s or an example's) for ``pipeline``: every
        served pipeline batches, so only batch-invariant methods, or a batch-dependent one
        where the pipeline runs each item alone (``RUNS_ALONE``: the build declares it in the
        manifest); a decoder takes weight-only."""
        if pipeline == "generate":
            return self.decoder
        return self.batch_invariant or pipeline in RUNS_ALONE


def _dynamic(job: Job) -> None:
    writers.dynamic(job.source, job.target, job.op_types, job.per_channel, job.reduce_range,
                    job.skip)


def _mixed(job: Job) -> None:
    dynamic = job.target.with_name(f"{job.target.stem}.dynamic.onnx")
    writers.dynamic(job.source, dynamic, job.op_types, job.per_channel, job.reduce_range, job.skip)
    writers.nbits(dynamic, job.target, ("MatMul",), "rtn", job.block_size, job.symmetric, (), [],
                  bits=8, only=job.skip)


def _static(job: Job) -> None:
    writers.static(job.source, job.target, job.op_types, job.per_channel, job.reduce_range,
                   job.calibration, job.skip)


def _blocks(algo: str, bits: int = 4) -> Callable[[Job], None]:
    def write(job: Job) -> None:
        writers.nbits(job.source, job.target, job.op_types, algo, job.block_size, job.symmetric,
                      job.calibration, job.skip, bits=bits)
    return write


def _minmax(job: Job) -> None:
    writers.minmax(job.source, job.target, job.op_types, job.block_size, job.skip)


def _int4_mixed(job: Job) -> None:
    writers.mixed(job.source, job.target, job.op_types, job.block_size, job.symmetric, job.skip)


def _fp16(job: Job) -> None:
    writers.fp16(job.source, job.target, job.keep_fp32_ops, job.skip)


RECORDS: tuple[Method, ...] = (
    Method("int8-dynamic", None, "int8 weights, activations per tensor at run time (batch-"
           "dependent)", _DYNAMIC_OPS, _dynamic, smooths=True, u8s8=True, batch_invariant=False,
           latency=9, size=7),
    Method("int8-static", None, "int8 weights and activations, ranges calibrated",
           ("MatMul", "Attention", "Gather", "Gemm", "Conv", "Add", "Mul", "Relu"), _static,
           calibrates=True, smooths=True, u8s8=True, latency=5, size=8),
    Method("int8-weights", None, "8-bit weight-only blocks, activations per block of a row",
           ("MatMul",), _blocks("rtn", bits=8), smooths=True, decoder=True, latency=1,
           size=6),
    Method("int4", "rtn", "4-bit weight-only blocks, round to nearest", ("MatMul", "Gather"),
           _blocks("rtn"), smooths=True, decoder=True, latency=2, size=1),
    Method("int4", "minmax", "4-bit blocks from each block's min/max, float zero points in "
           "the fast kernel's form", ("MatMul",), _minmax, smooths=True, decoder=True,
           latency=3, size=2),
    Method("int4", "mixed", "int4 minmax, the last MatMul (a decoder's vocabulary projection) "
           "in 8-bit blocks",
           ("MatMul",), _int4_mixed, smooths=True, decoder=True, latency=4, size=3),
    Method("int4", "hqq", "4-bit blocks, half-quadratic (no data), integer zero points",
           ("MatMul",), _blocks("hqq"), smooths=True, decoder=True, needs="torch", latency=7,
           size=5),
    Method("int4", "gptq", "4-bit blocks, Hessian-aware, calibrated", ("MatMul",),
           _blocks("gptq"), calibrates=True, smooths=True),
    Method("int4", "awq", "rtn after activation-aware scales, calibrated", ("MatMul", "Gather"),
           _blocks("rtn"), calibrates=True, latency=6, size=4),
    Method("fp16", None, "float16 weights and compute", ("MatMul", "Attention", "Gather", "Gemm",
           "Conv"), _fp16, latency=8, size=9),
    Method("int8-mixed", None, "int8-dynamic, left-out MatMuls in 8-bit blocks (batch-"
           "dependent)", _DYNAMIC_OPS, _mixed, smooths=True, u8s8=True, batch_invariant=False,
           held="left out (MatMuls: 8-bit blocks)", latency=10, size=10),
)
BY_LABEL = {record.label: record for record in RECORDS}
METHODS = tuple(dict.fromkeys(record.method for record in RECORDS))
ALGOS = tuple(record.algo for record in RECORDS if record.algo)  # int4; the first is the default
CALIBRATED = tuple(record.label for record in RECORDS if record.calibrates)


def record(method: str, algo: str | None = None) -> Method:
    """The record for ``--quantize method`` (``--algo algo`` for int4)."""
    return BY_LABEL[label(method, algo)]


def label(method: str, algo: str | None = None) -> str:
    """How a method is named in reports and tables: ``int4 ALGO`` for int4, else the method."""
    return f"int4 {algo or ALGOS[0]}" if method == "int4" else method


def tries(objective: str, pipeline: str | None = None) -> list[Method]:
    """``auto``'s candidates for ``objective``, in order: cheap and usually best first, so a
    short budget still gets the likely winner; only those that may serve ``pipeline``."""
    ranked = [r for r in RECORDS if getattr(r, objective) is not None
              and (pipeline is None or r.serves(pipeline))]
    return sorted(ranked, key=lambda r: getattr(r, objective))


def help_text() -> str:
    """``--quantize``'s help: every method and int4 algorithm with its one line."""
    return "; ".join(f"{r.label}: {r.summary}" for r in RECORDS)


def same_exclusions(method: str, other: str) -> bool:
    """Whether a node list tuning found for one method serves the other (int8-mixed leaves out
    what int8-dynamic cannot quantize)."""
    return method == other or {method, other} == {"int8-dynamic", "int8-mixed"}


def held(method: str, algo: str | None = None) -> str:
    """What becomes of the nodes tuning leaves out of ``method``."""
    return record(method, algo).held


def supported_ops(method: str, algo: str | None = None) -> tuple[str, ...]:
    """The op types a method (and int4 algorithm) can quantize."""
    return record(method, algo).ops


def missing_package(method: str, algo: str | None = None) -> str | None:
    """The package a method needs that is not installed (onnxruntime's HQQ computes in torch)."""
    import importlib.util

    needs = record(method, algo).needs
    return needs if needs and importlib.util.find_spec(needs) is None else None


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


def apply(method: str, source: Path, target: Path, *, op_types: Sequence[str],
          per_channel: bool, reduce_range: bool, algo: str, block_size: int, symmetric: bool,
          keep_fp32_ops: Sequence[str], calibration: Sequence[Feeds], candidates: list[str],
          exclude: Sequence[str] = (), only: Sequence[str] | None = None) -> None:
    """Write ``target`` from ``source`` by ``method`` (``algo`` for int4), ``exclude`` left out,
    or ``only`` these of ``candidates`` quantized (tuning's ranking)."""
    if label(method, algo) not in BY_LABEL:
        raise ValueError(f"unknown quantization method {label(method, algo)!r}")
    skip = list(exclude) if only is None else [n for n in candidates if n not in only]
    job = Job(source, target, tuple(op_types), per_channel, reduce_range, block_size, symmetric,
              tuple(keep_fp32_ops), calibration, skip)
    with writers.quiet():
        record(method, algo).write(job)
