"""Tracing on: the real X-Ray SDK, in Lambda mode (a fresh interpreter with Lambda's trace
header), sends each request's stages as subsegments to a UDP "daemon" on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from onnx_lambda.source_tree import root
from tests.conftest import EVENTS

ROOT = root()
TRACE_ID = "1-5759e988-bd862e3fe1be46a994272793"
PARENT = "53995c3f42cd8ad8"
PROBE = """
import json, sys
import handler.app
event = json.load(open(sys.argv[1]))
event["body"] = json.dumps({"inputs": [[1, 2, 3, 4]]})
event["isBase64Encoded"] = False
answer = handler.app.handler(event, None)
print(json.dumps(answer["statusCode"]))
"""


def documents(sock: socket.socket) -> list[dict]:
    """Each datagram: the daemon header line, then one segment document."""
    found = []
    sock.settimeout(2.0)
    try:
        while True:
            header, _, body = sock.recv(65536).decode().partition("\n")
            assert json.loads(header) == {"format": "json", "version": 1}
            found.append(json.loads(body))
    except TimeoutError:
        return found


def test_stages_become_subsegments_of_the_invocation_segment(model_dir: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as daemon:
        daemon.bind(("127.0.0.1", 0))
        port = daemon.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "ONNX_LAMBDA_TRACING": "on",
               "ONNX_LAMBDA_MODEL": str(model_dir / "linear.onnx"),
               "LAMBDA_TASK_ROOT": str(ROOT), "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{port}",
               "_X_AMZN_TRACE_ID": f"Root={TRACE_ID};Parent={PARENT};Sampled=1"}
        out = subprocess.run([sys.executable, "-c", PROBE,
                              str(EVENTS / "linear-http-api-predict.json")],
                             env=env, cwd=ROOT, check=True, capture_output=True, text=True,
                             timeout=120).stdout
        assert out.splitlines()[-1] == "200"
        sent = documents(daemon)
    (request,) = [d for d in sent if d["name"] == "request"]
    assert request["trace_id"] == TRACE_ID and request["parent_id"] == PARENT
    assert request["type"] == "subsegment"
    assert request["annotations"] == {"coldStart": True, "status": 200, "path": "/predict"}
    durations = request["metadata"]["onnx-lambda"]["durationsMs"]
    stages = request.get("subsegments") or [d for d in sent if d.get("parent_id") == request["id"]]
    assert [s["name"] for s in stages] == ["decode", "inference", "encode"]
    cursor = request["start_time"]
    for stage in stages:  # back-dated, consecutive, inside the request, as long as measured
        assert abs(stage["start_time"] - cursor) < 1e-6
        assert stage["end_time"] <= request["end_time"] + 1e-6
        assert abs((stage["end_time"] - stage["start_time"]) * 1000
                   - durations[stage["name"]]) < 1e-3
        cursor = stage["end_time"]


def test_without_a_trace_context_tracing_is_a_no_op(model_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ONNX_LAMBDA_TRACING": "on",
           "ONNX_LAMBDA_MODEL": str(model_dir / "linear.onnx")}
    env.pop("_X_AMZN_TRACE_ID", None)
    env.pop("LAMBDA_TASK_ROOT", None)
    result = subprocess.run([sys.executable, "-c", PROBE,
                             str(EVENTS / "linear-http-api-predict.json")],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "200"
