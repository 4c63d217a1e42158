"""``onnx-lambda regions`` against loopback TLS servers standing in for regions, each answering
after its own injected delay: the ranking follows the delays, a refused and a timed-out region
are reported unreachable without stopping the run, and nothing reads AWS credentials."""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.cli import main
from onnx_lambda.emulator.tls import self_signed
from onnx_lambda.regions import measure, report
from onnx_lambda.regions.endpoints import Target

DELAYS_MS = {"fake-far-1": 90.0, "fake-near-1": 0.0, "fake-mid-1": 45.0}


class FakeRegion:
    """A TLS server on 127.0.0.1 that answers every request 403 after ``delay_ms`` (an
    endpoint that wants credentials it was not sent, as Lambda's does)."""

    def __init__(self, context: ssl.SSLContext, delay_ms: float) -> None:
        self.context, self.delay_s = context, delay_ms / 1e3
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            with raw:
                try:
                    with self.context.wrap_socket(raw, server_side=True) as conn:
                        measure.read_head(conn)  # the request
                        time.sleep(self.delay_s)
                        self.requests += 1
                        conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n"
                                     b"Connection: close\r\n\r\n")
                except (OSError, ssl.SSLError):
                    continue

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (Linux)
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    context, cert = self_signed("127.0.0.1", tmp_path_factory.mktemp("tls"))
    servers = {name: FakeRegion(context, delay) for name, delay in DELAYS_MS.items()}
    refused = socket.create_server(("127.0.0.1", 0))  # bound, then closed: refused
    refused_port = refused.getsockname()[1]
    refused.close()
    silent = socket.create_server(("127.0.0.1", 0), backlog=8)  # accepts, never answers
    ports = {**{n: s.port for n, s in servers.items()}, "fake-refused-1": refused_port,
             "fake-silent-1": silent.getsockname()[1]}
    try:
        yield {"cert": cert, "ports": ports, "servers": servers}
    finally:
        silent.close()
        for server in servers.values():
            server.close()


def trusting(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


class Recording(dict[str, str]):
    """``os.environ`` stand-in that notes every AWS_* name looked up."""

    def __init__(self, source: dict[str, str]) -> None:
        super().__init__(source)
        self.asked: list[str] = []

    def __getitem__(self, key: str) -> str:
        self.asked.append(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.asked.append(key)
        return super().get(key, default)


def test_ranking_follows_the_delays_and_dead_regions_never_stop_the_run(
        world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # credentials that must stay unread: a file the audit hook watches, variables the
    # recording environment watches
    aws = tmp_path / "aws"
    aws.mkdir()
    (aws / "credentials").write_text("[default]\naws_access_key_id = AKIDNEVERREAD\n")
    env = Recording(dict(os.environ))
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(aws / "credentials"),
               AWS_ACCESS_KEY_ID="AKIDNEVERREAD", AWS_SECRET_ACCESS_KEY="never-read")
    monkeypatch.setattr(os, "environ", env)
    opened: list[str] = []
    watching = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if watching[0] and event == "open" and isinstance(args[0], str | Path):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # (a hook cannot be removed: it stops recording below)
    before = set(sys.modules)
    ports = world["ports"]
    try:
        results = measure.run(
            list(ports), lambda region: Target("127.0.0.1", ports[region], "127.0.0.1"),
            samples=3, timeout_s=0.5, context=trusting(world["cert"]), concurrency=2)
    finally:
        watching[0] = False
    doc = report.document(results, mode="lambda-endpoint", budget_ms=100.0, samples=3)
    ranked = [r["region"] for r in doc["regions"]]
    figures = {r["region"]: r["network_ms"] for r in doc["regions"]}
    print("\nmedian round trip per fake region (injected delay): "
          + ", ".join(f"{n} {figures[n]:.1f} ms ({DELAYS_MS[n]:g})" for n in DELAYS_MS))
    assert ranked[:3] == ["fake-near-1", "fake-mid-1", "fake-far-1"]
    down = {r["region"]: r for r in doc["regions"][3:]}
    assert set(down) == {"fake-refused-1", "fake-silent-1"}
    assert not any(r["reachable"] for r in down.values())
    assert down["fake-refused-1"]["errors"] == ["connection refused"]
    assert down["fake-silent-1"]["errors"] == ["timed out"]
    assert all(r["samples"] == 3 and r["status"] == [403] for r in doc["regions"][:3])
    near = doc["regions"][0]
    assert near["budget_left_ms"] == pytest.approx(100.0 - near["network_ms"])
    # no credentials: no AWS variable looked up, no AWS file opened, no AWS SDK imported
    assert not [k for k in env.asked if k.startswith("AWS_")]
    assert not [p for p in opened if str(aws) in p or ".aws" in p]
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in ("boto3",
                                                                             "botocore")}


def test_cli_json_round_trips_into_the_planners_option(
        world: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ports = world["ports"]
    args = ["regions", "fake-near-1,fake-far-1", "fake-refused-1", "-n", "2",
            "--timeout", "0.5", "--host-template", "localhost", "--cacert", str(world["cert"])]
    for name in ("fake-near-1", "fake-far-1", "fake-refused-1"):
        args += ["--resolve", f"{name}=127.0.0.1:{ports[name]}"]
    assert main([*args, "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["format"] == report.FORMAT
    assert [r["region"] for r in doc["regions"]] == ["fake-near-1", "fake-far-1",
                                                     "fake-refused-1"]
    saved = tmp_path / "regions.json"
    saved.write_text(out)
    assert list(report.network_option(str(saved))) == ["fake-near-1", "fake-far-1"]

    assert main(args) == 0
    text = capsys.readouterr().out
    assert "unreachable (not ranked): fake-refused-1 (connection refused)" in text
    assert "fake-near-1: " in text and "ms budget" in text
