"""The ONNX Runtime session: options sized for Lambda, the model's signature, ``run``.

Session options (measured with ``python -m onnx_lambda.bench.handler_overhead``, see README):
- ``intra_op_num_threads`` from the function's memory: Lambda gives 1 vCPU per 1,769 MB (max 6);
  more threads than the CPU share buys only adds contention. Capped by the visible CPUs.
- Thread-pool spinning off: on Lambda a spinning worker burns the CPU quota the request needs.
- Online graph optimization off for an artifact optimized offline for this onnxruntime version
  (it is already applied; re-running it only costs cold start), ``basic`` otherwise (cheap,
  portable constant folding and redundant-node removal).
- CPU memory arena and memory patterns on (defaults): they make warm runs allocation-free.
"""

from __future__ import annotations

import math
import os
from typing import Any, NamedTuple

import numpy as np
import onnxruntime as ort

from handler.artifact import Artifact
from handler.errors import InferenceError, ModelLoadError

MB_PER_VCPU = 1769
MAX_VCPUS = 6

_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

# ONNX element type (as onnxruntime spells it) → (numpy dtype, Open Inference Protocol datatype)
_TYPES: dict[str, tuple[np.dtype, str]] = {
    "tensor(float)": (np.dtype(np.float32), "FP32"),
    "tensor(double)": (np.dtype(np.float64), "FP64"),
    "tensor(float16)": (np.dtype(np.float16), "FP16"),
    "tensor(int8)": (np.dtype(np.int8), "INT8"),
    "tensor(int16)": (np.dtype(np.int16), "INT16"),
    "tensor(int32)": (np.dtype(np.int32), "INT32"),
    "tensor(int64)": (np.dtype(np.int64), "INT64"),
    "tensor(uint8)": (np.dtype(np.uint8), "UINT8"),
    "tensor(uint16)": (np.dtype(np.uint16), "UINT16"),
    "tensor(uint32)": (np.dtype(np.uint32), "UINT32"),
    "tensor(uint64)": (np.dtype(np.uint64), "UINT64"),
    "tensor(bool)": (np.dtype(np.bool_), "BOOL"),
    "tensor(string)": (np.dtype(object), "BYTES"),
}


# Open Inference Protocol datatype → numpy dtype
DATATYPES: dict[str, np.dtype] = {datatype: dtype for dtype, datatype in _TYPES.values()}


class TensorSpec(NamedTuple):
    name: str
    dtype: np.dtype  # object for strings and for non-tensor values (sequences, maps)
    datatype: str  # Open Inference Protocol V2 name; "" for non-tensor values
    shape: tuple[int | str | None, ...]  # None or a symbolic name for a dynamic dimension

    def describe(self) -> str:
        """``x: float32[batch, ?, 3]``: symbolic names kept (they show which axes are tied,
        see ``handler.dims``), ``?`` only where the model names nothing."""
        dims = ", ".join(_dim(d) for d in self.shape)
        return f"{self.name}: {self.dtype.name if self.datatype != 'BYTES' else 'string'}[{dims}]"


def _dim(dim: int | str | None) -> str:
    if isinstance(dim, int):
        return str(dim) if dim >= 0 else "?"
    return (dim.strip() if isinstance(dim, str) else "") or "?"


def threads_for(memory_mb: int | None, visible_cpus: int) -> int:
    """Intra-op threads for a function of ``memory_mb`` (None = not on Lambda: all visible)."""
    if memory_mb is None:
        return max(1, visible_cpus)
    vcpus = min(MAX_VCPUS, max(1, math.floor(memory_mb / MB_PER_VCPU + 0.5)))
    return max(1, min(vcpus, visible_cpus))


def visible_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _spec(arg: Any) -> TensorSpec:
    dtype, datatype = _TYPES.get(arg.type, (np.dtype(object), ""))
    return TensorSpec(arg.name, dtype, datatype, tuple(arg.shape))


class Model:
    """An ONNX Runtime session plus its signature. ``run`` is the only per-request call."""

    def __init__(self, artifact: Artifact, *, threads: int, graph_optimization: str) -> None:
        self.artifact = artifact
        self.threads = threads
        level = graph_optimization
        if level == "auto":
            level = "disable" if artifact.optimized_offline else "basic"
        self.graph_optimization = level
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = _OPT_LEVELS[level]
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(
                str(artifact.path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise ModelLoadError(f"{artifact.path}: onnxruntime cannot load it: {exc}") from exc
        self.inputs = tuple(_spec(a) for a in self.session.get_inputs())
        self.outputs = tuple(_spec(a) for a in self.session.get_outputs())
        self._output_names = [o.name for o in self.outputs]
        manifest = artifact.manifest
        self.name = manifest.name if manifest else artifact.path.stem
        self.version = str(manifest.metadata.get("version", "1")) if manifest else "1"
        self.input_by_name = {spec.name: spec for spec in self.inputs}

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, Any]:
        try:
            values = self.session.run(self._output_names, feeds)
        except Exception as exc:  # a shape the graph rejects, a kernel failure, ...
            raise InferenceError(f"inference failed: {_first_line(exc)}") from exc
        return dict(zip(self._output_names, values, strict=True))


def _first_line(exc: Exception) -> str:
    """onnxruntime messages start with a useful line and continue with internals."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
