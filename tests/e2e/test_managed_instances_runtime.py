"""The handler under the real runtime client in its Lambda Managed Instances mode: awslambdaric
(4.2+) forks ``AWS_LAMBDA_MAX_CONCURRENCY`` worker processes, each importing the handler (its own
init) and polling the Runtime API. Here they share one ``/tmp`` and an ``s3://`` model on a real
(moto) S3 server: one download, every process serves, one ONNX Runtime thread each, and SIGTERM
stops each worker with a JSON shutdown line."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
WORKERS = 3
NEXT = "/2018-06-01/runtime/invocation/next"


class RuntimeApi(ThreadingHTTPServer):
    """The Runtime API side of one execution environment: hands queued events to whichever
    worker polls, collects the answers."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.events: queue.Queue[bytes] = queue.Queue()
        self.answers: queue.Queue[tuple[str, bytes]] = queue.Queue()
        self.polling = 0  # workers blocked in /next right now
        self.lock = threading.Lock()

    def wait_polling(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.polling < count:
            assert time.monotonic() < deadline, f"{self.polling} of {count} workers polling"
            time.sleep(0.01)


class _Handler(BaseHTTPRequestHandler):
    server: RuntimeApi

    def log_message(self, *_: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if self.path != NEXT:
            self.send_error(404)
            return
        with self.server.lock:
            self.server.polling += 1
        try:
            # Longer than the test waits for the stop: a worker that only exits once /next
            # answers fails the test instead of passing late.
            body = self.server.events.get(timeout=120)
        except queue.Empty:
            self.send_error(500)
            return
        finally:
            with self.server.lock:
                self.server.polling -= 1
        self.send_response(200)
        for name, value in {"Content-Type": "application/json",
                            "Lambda-Runtime-Aws-Request-Id": str(uuid.uuid4()),
                            "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000) + 30_000),
                            "Lambda-Runtime-Invoked-Function-Arn":
                                "arn:aws:lambda:us-east-1:123456789012:function:f:live",
                            "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.answers.put((self.path, body))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def runtime_api() -> Iterator[RuntimeApi]:
    api = RuntimeApi()
    thread = threading.Thread(target=api.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        api.shutdown()
        api.server_close()  # its listening socket (handler threads may outlive the test)
        thread.join(timeout=10)


def test_worker_processes_share_one_download_and_each_serve(
        tmp_path: Path, s3_server: tuple[str, Counting], runtime_api: RuntimeApi) -> None:
    _, counting = s3_server
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="models")
    s3.upload_file(str(models.linear(tmp_path / "model.onnx")), "models", "lin/model.onnx")
    s3.close()  # its pooled sockets (left to the collector: a ResourceWarning in a later test)
    # AWS_EXECUTION_ENV as Lambda sets it: the runtime client then polls /next on a thread,
    # which leaves the main thread free to run the SIGTERM handler.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AWS_LAMBDA_MAX_CONCURRENCY": str(WORKERS),
           "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
           "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{runtime_api.server_port}",
           "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "4096",
           "ONNX_LAMBDA_MODEL": "s3://models/lin/model.onnx",
           "ONNX_LAMBDA_S3_CACHE_DIR": str(tmp_path / "tmp-shared"), "ONNX_LAMBDA_METRICS": "0"}
    runtime = subprocess.Popen([sys.executable, "-m", "awslambdaric", "handler.app.handler"],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        # Pings that hold their process, so each worker takes one.
        for _ in range(WORKERS):
            runtime_api.events.put(json.dumps({"warmer": True, "holdMs": 300}).encode())
        answers = [runtime_api.answers.get(timeout=120) for _ in range(WORKERS)]
        runtime_api.events.put(json.dumps({"inputs": [[1, 1, 1, 1]]}).encode())
        _, body = runtime_api.answers.get(timeout=60)
        prediction = json.loads(body)
        # SIGTERM lands while every worker's poll thread is blocked in /next, as on a scale-in.
        runtime_api.wait_polling(WORKERS, timeout=60)
    finally:
        os.killpg(runtime.pid, signal.SIGTERM)  # the parent and its workers, as Lambda stops them
        out, _ = runtime.communicate(timeout=30)
        print(out[-3000:])

    assert all(path.endswith("/response") for path, _ in answers), answers
    environments = {json.loads(body)["environmentId"] for _, body in answers}
    assert len(environments) == WORKERS  # three processes, each initialised on its own
    assert counting.gets == 1  # ... from one download in the shared /tmp
    assert prediction["outputs"]["y"] == models.WEIGHTS.sum(axis=0, keepdims=True).tolist()

    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    inits = [r for r in records if r.get("message") == "initialized"]
    assert len(inits) == WORKERS and {r["threads"] for r in inits} == {1}
    assert len([r for r in records if r.get("message") == "shutdown"]) == WORKERS
