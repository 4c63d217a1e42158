"""Step 1: load and validate the ONNX file, record its signature (``ladder`` finds its example).

Validation is by the two authorities that matter: the ONNX checker (a well-formed graph) and
onnxruntime itself (a session on the CPU provider can be created).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort
from google.protobuf.message import DecodeError
from onnx.external_data_helper import load_external_data_for_model

from handler.manifest import TensorInfo
from onnx_lambda.build_model.errors import InvalidModelError, UnsupportedOpsError

# onnxruntime type string → the numpy dtype name the manifest records
_DTYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int8)": "int8", "tensor(int16)": "int16", "tensor(int32)": "int32",
    "tensor(int64)": "int64", "tensor(uint8)": "uint8", "tensor(uint16)": "uint16",
    "tensor(uint32)": "uint32", "tensor(uint64)": "uint64", "tensor(bool)": "bool",
    "tensor(string)": "str",
}
# Operator domains onnxruntime implements (standard ONNX, ONNX-ML, Microsoft contrib ops).
_KNOWN_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc"}


def parse(path: Path) -> onnx.ModelProto:
    """The graph without its external data (``inspect`` reports it as such), or
    ``InvalidModelError`` saying why the file is not ONNX."""
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, OSError) as exc:
        raise InvalidModelError(f"{path}: not an ONNX model ({exc.__class__.__name__}: "
                                f"{exc})") from exc
    if not model.graph.node:
        raise InvalidModelError(f"{path}: not an ONNX model (no graph nodes)")
    return model


def load(path: Path, model: onnx.ModelProto) -> onnx.ModelProto:
    """``parse``'s ``model`` with its external data read in, checked, or
    ``InvalidModelError`` / ``UnsupportedOpsError`` saying why it is not usable."""
    try:
        load_external_data_for_model(model, str(path.parent))
    except (OSError, ValueError, onnx.checker.ValidationError) as exc:  # missing, outside
        raise InvalidModelError(f"{path}: its external data cannot be read ({exc})") from exc
    try:
        onnx.checker.check_model(model, full_check=False)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        if "No Op registered" in first or "No opset import" in first:
            raise UnsupportedOpsError(f"{path}: {first}") from exc
        raise InvalidModelError(f"{path}: invalid ONNX graph: {first}") from exc
    return model


def cpu_session(model: Path | bytes, level: ort.GraphOptimizationLevel | None = None
                ) -> ort.InferenceSession:
    """A session on the CPU provider (a file or a serialized model), onnxruntime's log at errors
    only: the build prints its own lines. ``level``: the graph optimization (default: all)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if level is not None:
        options.graph_optimization_level = level
    return ort.InferenceSession(str(model) if isinstance(model, Path) else model, options,
                                providers=["CPUExecutionProvider"])


def check_runnable(path: Path, model: onnx.ModelProto, serialized: bytes | None = None
                   ) -> ort.InferenceSession:
    """A session on the CPU provider, or a clear error naming the operators it cannot run.
    ``serialized``: ``model`` in memory (not saved at ``path``, which the errors name)."""
    foreign = sorted({f"{n.domain}:{n.op_type}" for n in model.graph.node
                      if n.domain not in _KNOWN_DOMAINS})
    try:
        return cpu_session(path if serialized is None else serialized,
                           ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    except Exception as exc:  # onnxruntime's Fail / InvalidGraph / NotImplemented
        first = str(exc).strip().splitlines()[0][:400]
        if foreign:
            raise UnsupportedOpsError(f"{path}: operators onnxruntime does not implement: "
                                      f"{', '.join(foreign)} ({first})") from exc
        if "NOT_IMPLEMENTED" in first or "not a registered function" in first:
            raise UnsupportedOpsError(f"{path}: onnxruntime cannot run it: {first}") from exc
        raise InvalidModelError(f"{path}: onnxruntime cannot load it: {first}") from exc


def runner(session: ort.InferenceSession) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``run(feeds) → {output name: value}``; a failing run raises without onnxruntime's own
    error log on stderr (the build reports it once, in one line)."""
    names = [o.name for o in session.get_outputs()]
    quiet = ort.RunOptions()
    quiet.log_severity_level = 4  # fatal only: a failing kernel is reported by the caller

    def run(feeds: dict[str, Any]) -> dict[str, Any]:
        return dict(zip(names, session.run(names, feeds, quiet), strict=True))

    return run


def tensor_infos(args: list[ort.NodeArg]) -> tuple[TensorInfo, ...]:
    return tuple(TensorInfo(a.name, _DTYPES.get(a.type, a.type), tuple(a.shape)) for a in args)


def graph_infos(model: onnx.ModelProto) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
    """The graph's inputs (initializers left out, as onnxruntime leaves them out) and outputs,
    read from the file as onnxruntime reports them: without a session, which for a language
    model means reading its weights (seconds)."""
    weights = {init.name for init in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in weights]
    return (tuple(map(_value_info, inputs)), tuple(map(_value_info, model.graph.output)))


def _value_info(value: onnx.ValueInfoProto) -> TensorInfo:
    tensor = value.type.tensor_type
    if not value.type.HasField("tensor_type"):  # a sequence or a map: named by its kind
        return TensorInfo(value.name, value.type.WhichOneof("value") or "", ())  # (no decoder's)
    kind = onnx.TensorProto.DataType.Name(tensor.elem_type).lower()
    name = _DTYPES.get(f"tensor({kind})", f"tensor({kind})")
    dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                 for d in tensor.shape.dim)
    return TensorInfo(value.name, name, dims)
