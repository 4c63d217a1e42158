"""What every benchmark runs: one model, one request, served the same way by each target.

All targets get the same tensors (``{"inputs": {name: nested list}}``, the model manifest's
example after its pipeline's pre-processing). The baselines run the portable model file; ours
runs the model folder as built, re-labelled as a tensor pipeline whose example is those tensors
(a copy of ``model.json`` next to links to the same files), so that every target does the same
work and ours keeps everything else its artifact gives it (offline optimization, manifest).
The C-API floor runs the file ours loads (``runtime_file``) at the graph-optimization level
ours picks for it (``runtime_optimization``): the least that serving this artifact costs.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from onnx_lambda.source_tree import root


@dataclass(frozen=True)
class Subject:
    name: str
    source: Path  # the model as given
    model: Path  # what ONNX_LAMBDA_MODEL points at (a model folder or an .onnx file)
    portable: Path  # the plain .onnx file the baselines load
    body: bytes  # the HTTP request body
    workdir: Path  # request.json and event.json live here
    runtime_file: Path  # the file ours loads (the artifact's choice), the C-API floor too
    runtime_optimization: str  # the graph-optimization level ours loads it at

    @property
    def request_file(self) -> Path:
        return self.workdir / "request.json"

    @property
    def event_file(self) -> Path:
        return self.workdir / "event.json"

    def __enter__(self) -> Subject:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def environment(self, memory_mb: int) -> dict[str, str]:
        """Variables every Lambda-style target gets (each reads the ones it knows)."""
        return {"ONNX_LAMBDA_MODEL": str(self.model), "MODEL_PATH": str(self.portable),
                "POWERTOOLS_SERVICE_NAME": "bench",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb)}


def http_api_event(body: bytes) -> dict[str, object]:
    """An API Gateway HTTP API (payload 2.0) ``POST /predict`` event carrying ``body``."""
    now = time.time()
    return {
        "version": "2.0", "routeKey": "POST /predict", "rawPath": "/predict",
        "rawQueryString": "", "isBase64Encoded": False, "body": body.decode(),
        "headers": {"content-type": "application/json", "accept": "application/json",
                    "host": "bench.execute-api.us-east-1.amazonaws.com"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench", "stage": "$default",
            "domainName": "bench.execute-api.us-east-1.amazonaws.com", "domainPrefix": "bench",
            "requestId": "bench", "routeKey": "POST /predict",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
            "http": {"method": "POST", "path": "/predict", "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "onnx-lambda-bench"}},
    }


def prepare(model: Path, name: str | None = None) -> Subject:
    """Resolve ``model`` (folder or .onnx) into a subject with its request files written, in a
    temporary folder that ``with prepare(...) as subject:`` removes."""
    import onnxruntime

    portable, values, runtime = floor_inputs(model)
    names = [i.name for i in onnxruntime.InferenceSession(
        str(portable), providers=["CPUExecutionProvider"]).get_inputs()]
    body = json.dumps({"inputs": dict(zip(names, values, strict=True))}).encode()
    workdir = Path(tempfile.mkdtemp(prefix="onnx-lambda-bench-"))
    try:
        inputs = dict(zip(names, values, strict=True))
        ours = _as_tensor_artifact(model, inputs, workdir / "model") if model.is_dir() else model
        subject = Subject(name or model.stem, model, ours.resolve(), Path(portable).resolve(),
                          body, workdir, Path(runtime[0]).resolve(), runtime[1])
        subject.request_file.write_bytes(body)
        subject.event_file.write_text(json.dumps(http_api_event(body)))
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return subject


def default_model() -> Path:
    """models/digits when built, else a tiny generated model (its folder removed at exit)."""
    digits = root() / "models" / "digits"
    if (digits / "model.json").exists():
        return digits
    from onnx_lambda.tiny_models import linear  # onnx: only when no model is built

    folder = tempfile.mkdtemp(prefix="onnx-lambda-tiny-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return linear(Path(folder) / "linear.onnx")


def floor_inputs(model: Path) -> tuple[Path, list[Any], tuple[str, str]]:
    """The portable model file, one example input per model input (as nested lists: the
    manifest's example after the pipeline's pre-processing, as the handler's warm-up feeds it),
    and (the file the handler loads, its graph-optimization level)."""
    from handler.bootstrap import create
    from handler.settings import Settings

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model)}, warmup=False))
    artifact, manifest = service.model.artifact, service.model.artifact.manifest
    portable = Path(artifact.path) if manifest is None else model / manifest.portable
    feeds = service.pipeline.preprocess(service.example_inputs(), {})
    return (portable, [feeds[spec.name].tolist() for spec in service.model.inputs],
            (artifact.path, service.model.graph_optimization))


def _as_tensor_artifact(folder: Path, inputs: dict[str, object], dest: Path) -> Path:
    """``folder``'s artifact with a tensor pipeline and ``inputs`` as its example."""
    from handler.manifest import Manifest

    manifest = Manifest.load(folder)
    dest.mkdir(parents=True)
    for name in manifest.files:
        (dest / name).symlink_to((folder / name).resolve())
    manifest._replace(pipeline="tensor", pipeline_options={}, labels=None,
                      example=inputs).dump(dest)
    return dest
