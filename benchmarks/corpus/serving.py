"""Build a corpus model with the real CLI, serve it through the emulator behind the project's
``template.yaml``, send its example through each wire format (simple JSON ``/predict``, V2 JSON
and V2 binary ``/v2/models/{name}/infer``) and compare with onnxruntime's Python API on the
original file. Shared by the corpus tests and ``python -m benchmarks.corpus.bench``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from benchmarks.corpus.registry import CorpusModel, Feeds
from onnx_lambda.client.wire import v2_request, v2_response
from onnx_lambda.source_tree import root

CODECS = ("json", "v2-json", "v2-binary")


class Built(NamedTuple):
    folder: Path
    exit_code: int
    seconds: float
    log: str  # the command's stderr


class ServeError(Exception):
    """A response that is not a 200 with the outputs."""


def write_example(feeds: Feeds, path: Path) -> Path:
    np.savez(path, **feeds)
    return path


def build(model: CorpusModel, source: Path, folder: Path, example: Path | None = None,
          extra: Sequence[str] = ()) -> Built:
    """``onnx-lambda build-model SOURCE -o FOLDER [--example FILE]``, as a user runs it."""
    command = [sys.executable, "-m", "onnx_lambda.cli", "build-model", str(source),
               "-o", str(folder), *extra]
    if example is not None:
        command += ["--example", str(example)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=root(),
                          check=False)
    return Built(folder, done.returncode, time.perf_counter() - started, done.stderr)


def reference(source: Path, feeds: Feeds) -> dict[str, Any]:
    """The original file's outputs from onnxruntime's Python API."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """The model folder behind ``template.yaml`` (``ONNX_LAMBDA_MODEL``, as ``sam local
    --env-vars`` sets it) on a free port → base URL."""
    from onnx_lambda.emulator import Emulator

    emulator = Emulator(root() / "template.yaml", port=0, log=None, init_timeout_s=60.0,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(folder)}})
    with emulator.running():
        yield emulator.url


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:  # closes the socket behind it
            return error.code, dict(error.headers), error.read()


def request(codec: str, base: str, name: str, feeds: Feeds,
            outputs: Sequence[str] = ()) -> tuple[str, bytes, dict[str, str]]:
    """(url, body, headers) of one inference request in ``codec``; ``outputs``: the V2 outputs
    to ask for (default: all)."""
    if codec == "json":
        body = {"inputs": {k: v.tolist() for k, v in feeds.items()}}
        return base + "/predict", json.dumps(body).encode(), {"Content-Type": "application/json"}
    body, headers = v2_request(feeds, binary=codec == "v2-binary",
                               outputs=list(outputs) or None)
    return f"{base}/v2/models/{name}/infer", body, headers


def infer(codec: str, base: str, name: str, feeds: Feeds,
          outputs: Sequence[str] = ()) -> dict[str, Any]:
    """Send one request and decode the answer → {output name: array or JSON value}."""
    url, body, headers = request(codec, base, name, feeds, outputs)
    status, answer_headers, answer = post(url, body, headers)
    if status != 200:
        raise ServeError(f"{codec}: HTTP {status}: {answer[:300].decode('utf-8', 'replace')}")
    if codec == "json":
        return json.loads(answer)["outputs"]
    return v2_response(answer, {k.lower(): v for k, v in answer_headers.items()})


def error(expected: Any, got: Any) -> float:
    """Largest error of ``got`` against ``expected``: for numbers, max |got - expected| over max
    |expected| (relative to the output's scale; 0 when equal); for strings, 0 or 1 (exact);
    sequences and maps element by element."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or {str(k) for k in expected} != set(map(str, got)):
            return 1.0
        lookup = {str(k): v for k, v in got.items()}
        return max((error(v, lookup[str(k)]) for k, v in expected.items()), default=0.0)
    if isinstance(expected, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(expected):
            return 1.0
        return max((error(e, g) for e, g in zip(expected, got, strict=True)), default=0.0)
    want = np.asarray(expected)
    have = np.asarray(got)
    if want.dtype.kind in "OSU" or have.dtype.kind in "OSU":
        same = want.shape == have.shape and all(
            _text(a) == _text(b) for a, b in zip(want.reshape(-1), have.reshape(-1),
                                                 strict=True))
        return 0.0 if same else 1.0
    if want.shape != have.shape:
        return float("inf")
    if want.dtype.kind in "iub":
        return 0.0 if np.array_equal(want, have) else 1.0
    want64, have64 = want.astype(np.float64), have.astype(np.float64)
    scale = float(np.max(np.abs(want64), initial=0.0))
    diff = float(np.max(np.abs(have64 - want64), initial=0.0))
    return diff / scale if scale else diff


def max_error(expected: dict[str, Any], got: dict[str, Any]) -> float:
    missing = set(expected) - set(got)
    if missing:
        raise ServeError(f"outputs missing from the response: {sorted(missing)}")
    return max(error(expected[name], got[name]) for name in expected)


def tensor_outputs(expected: dict[str, Any]) -> list[str]:
    """The outputs V2 can carry (tensors; sequences and maps go through /predict only)."""
    return [name for name, value in expected.items() if isinstance(value, np.ndarray)]


def _text(value: Any) -> str:
    """A string element as text (V2's BYTES come back as bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)
