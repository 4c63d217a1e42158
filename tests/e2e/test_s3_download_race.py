"""Lambda Managed Instances start one process per concurrent request, all sharing ``/tmp``: the
``s3://`` model must be downloaded once per environment, and every process must load a whole
model. Real processes, a real (moto) S3 server on a free loopback port, a real ONNX Runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest

from onnx_lambda.source_tree import root
from tests.support import models
from tests.support.s3_server import Counting, s3_server_fixture

s3_server = s3_server_fixture

pytestmark = pytest.mark.e2e
ROOT = root()
PROCESSES = 4

CHILD = """
import json, sys
import numpy as np, onnxruntime as ort
from handler.artifact import resolve
found = resolve(sys.argv[1], ort_version=ort.__version__, verify="auto", cache_dir=sys.argv[2])
session = ort.InferenceSession(str(found.path), providers=["CPUExecutionProvider"])
(y,) = session.run(None, {"x": np.ones((1, 4), np.float32)})
print(json.dumps({"path": str(found.path), "y": y.tolist()}))
"""


def start(uri: str, cache: Path, processes: int = PROCESSES) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, uri, str(cache)], cwd=ROOT,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(processes)]
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.mark.parametrize("layout", ["file", "folder"])
def test_processes_starting_together_download_once_and_all_serve(
        tmp_path: Path, s3_server: tuple[str, Counting], layout: str) -> None:
    _, counting = s3_server
    model = models.linear(tmp_path / "model.onnx")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="models")
    if layout == "file":
        s3.upload_file(str(model), "models", "lin/model.onnx")
        uri, files = "s3://models/lin/model.onnx", 1
    else:
        s3.upload_file(str(model), "models", "lin/v1/model.onnx")
        s3.put_object(Bucket="models", Key="lin/v1/labels.txt", Body=b"a\nb\n")
        uri, files = "s3://models/lin/v1", 2
    s3.close()  # its pooled sockets (left to the collector: a ResourceWarning in a later test)
    cache = tmp_path / "tmp-shared"

    results = start(uri, cache)
    assert counting.gets == files  # one download per object, not one per process
    expected = (models.WEIGHTS.sum(axis=0, keepdims=True)).tolist()
    assert all(r["y"] == expected for r in results)
    assert len({r["path"] for r in results}) == 1
    leftovers = [p.name for p in (cache / "models" / "lin").iterdir()]
    assert not [name for name in leftovers if name.startswith(".")]  # no staging folders

    # A later start reuses the environment's copy; a changed object is fetched again, once.
    start(uri, cache, processes=1)
    assert counting.gets == files
    if layout == "folder":
        s3.put_object(Bucket="models", Key="lin/v1/labels.txt", Body=b"c\nd\n")
        start(uri, cache, processes=1)
        assert counting.gets == 2 * files
        assert (cache / "models" / "lin" / "v1" / "labels.txt").read_text() == "c\nd\n"
