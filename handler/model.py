"""The ONNX Runtime session: options sized for Lambda, the model's signature, ``run``.

Session options (measured by the handler benchmark's session-option sweep;
docs/explanation/performance.md):
- ``intra_op_num_threads`` from the function's memory: Lambda gives 1 vCPU per 1,769 MB (max 6);
  more threads than the CPU share buys only adds contention. Capped by the visible CPUs.
- Thread-pool spinning off: on Lambda a spinning worker burns the CPU quota the request needs.
  A decoder's steps come back to back, so its pool spins (``handler.bootstrap.spinning``).
- Online graph optimization off for an artifact optimized offline for this onnxruntime version
  (it is already applied; re-running it only costs cold start), ``basic`` otherwise (cheap,
  portable constant folding and redundant-node removal).
- CPU memory arena and memory patterns on (defaults): they make warm runs allocation-free.

The session is ONNX Runtime's C library through ``handler.ort`` (no numpy, no Python binding).
"""

from __future__ import annotations

import math
import os

from handler.artifact import Artifact
from handler.errors import InferenceError, ModelLoadError
from handler.ort import capi
from handler.ort.providers import Choice
from handler.ort.session import Session, ValueInfo
from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MB_PER_VCPU = 1769
MAX_VCPUS = 6
_CPU = Choice("cpu", "default")


class DType(str):
    """An element type by numpy's name (``float32``; ``object`` for strings and non-tensor
    values), with numpy's ``.name`` and ``.kind``: pipelines and user code read specs the way
    they read numpy dtypes, and ``numpy.dtype(spec.dtype)`` accepts it."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self)

    @property
    def kind(self) -> str:
        return _KINDS.get(self[:4], "O")


_KINDS = {"floa": "f", "int8": "i", "int1": "i", "int3": "i", "int6": "i", "uint": "u",
          "bool": "b"}
OBJECT = DType("object")

# tensor element type (handler.ort.tensor's name) → (spec dtype, Open Inference Protocol datatype)
_TYPES: dict[str, tuple[DType, str]] = {
    "float32": (DType("float32"), "FP32"),
    "float64": (DType("float64"), "FP64"),
    "float16": (DType("float16"), "FP16"),
    "int8": (DType("int8"), "INT8"),
    "int16": (DType("int16"), "INT16"),
    "int32": (DType("int32"), "INT32"),
    "int64": (DType("int64"), "INT64"),
    "uint8": (DType("uint8"), "UINT8"),
    "uint16": (DType("uint16"), "UINT16"),
    "uint32": (DType("uint32"), "UINT32"),
    "uint64": (DType("uint64"), "UINT64"),
    "bool": (DType("bool"), "BOOL"),
    "string": (OBJECT, "BYTES"),
}

# Open Inference Protocol datatype → tensor element type name
DATATYPES: dict[str, str] = {datatype: name for name, (_, datatype) in _TYPES.items()}


class TensorSpec(NamedTuple):
    name: str
    dtype: DType  # object for strings and for non-tensor values (sequences, maps)
    datatype: str  # Open Inference Protocol V2 name; "" for non-tensor values
    shape: tuple[int | str | None, ...]  # None or a symbolic name for a dynamic dimension

    @property
    def element(self) -> str:
        """The ``Tensor`` element type (``string`` for BYTES); "" for non-tensor values."""
        return "string" if self.datatype == "BYTES" else (self.dtype.name if self.datatype else "")

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


def _spec(value: ValueInfo) -> TensorSpec:
    dtype, datatype = _TYPES.get(value.dtype, (OBJECT, ""))
    return TensorSpec(value.name, dtype, datatype, value.shape)


class Model:
    """An ONNX Runtime session plus its signature. ``run`` is the only per-request call."""

    def __init__(self, artifact: Artifact, *, threads: int, graph_optimization: str,
                 name: str = "", provider: Choice = _CPU, spinning: bool = False) -> None:
        self.artifact = artifact
        self.threads = threads
        self.spinning = spinning
        self.provider = provider
        level = graph_optimization
        if level == "auto":
            level = "disable" if artifact.optimized_offline else "basic"
        self.graph_optimization = level
        try:
            self.session = Session(os.fspath(artifact.path), intra_op_threads=threads,
                                   inter_op_threads=1, optimization=level, log_severity=3,
                                   config={"session.intra_op.allow_spinning":
                                           "1" if spinning else "0"},
                                   cuda=provider.provider == "cuda")
        except (capi.OrtError, capi.LibraryError) as exc:
            raise ModelLoadError(f"{artifact.path}: onnxruntime cannot load it: {exc}") from exc
        self.inputs = tuple(_spec(v) for v in self.session.inputs)
        self.outputs = tuple(_spec(v) for v in self.session.outputs)
        manifest = artifact.manifest
        self.name = name or (manifest.name if manifest else
                             os.path.splitext(os.path.basename(artifact.path))[0])
        self.version = str(manifest.metadata.get("version", "1")) if manifest else "1"
        self.input_by_name = {spec.name: spec for spec in self.inputs}

    def run(self, feeds: dict[str, Any]) -> dict[str, Any]:
        """``Tensor`` (or numpy) feeds → every output: ``Tensor``, or lists/dicts for
        sequence and map outputs."""
        try:
            return self.session.run(feeds)
        except capi.OrtError as exc:  # a shape the graph rejects, a kernel failure, ...
            raise InferenceError(f"inference failed: {first_line(exc)}") from exc
        except TypeError as exc:  # a user pipeline's feed that is no tensor
            raise InferenceError(f"inference failed: {exc}") from exc


def first_line(exc: Exception) -> str:
    """onnxruntime messages start with a useful line and continue with internals."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
