"""``onnx-lambda serve --tls`` and ``onnx-lambda probe`` against the real handler: HTTPS with
the self-signed certificate (connect includes the handshake; an HTTP/2 client is answered in
HTTP/1.1), a SigV4-signed call, and the probe's smoke run writing its report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from botocore.credentials import Credentials

from onnx_lambda.cli import main
from onnx_lambda.client import Client
from onnx_lambda.client.auth import SigV4
from onnx_lambda.client.commands import VARIANT_NAMES
from onnx_lambda.client.probe import VARIANTS
from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.support import models

pytestmark = pytest.mark.e2e
ROOT = root()
X = {"x": np.ones((1, 4), dtype=np.float32)}


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    model = models.linear(tmp_path_factory.mktemp("model") / "linear.onnx")
    emulator = Emulator(ROOT / "template.yaml", port=0, log=None, tls=True,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}})
    with emulator.running():
        yield emulator
    assert emulator.tls_cert is None  # the self-signed pair is removed with the servers


def test_https_with_the_emulator_certificate(tls: Emulator) -> None:
    assert tls.url.startswith("https://") and tls.tls_cert is not None
    assert "TLS: self-signed certificate" in tls.banner()
    for http2 in (False, True):
        with Client(tls.url, verify=str(tls.tls_cert), http2=http2, keepalive=False) as client:
            timing = client.infer(X).timing
        assert timing.new_connection and timing.connect > 0
        assert timing.protocol == "HTTP/1.1"  # ALPN: the emulator offers http/1.1 only


def test_untrusted_certificate_fails_at_once(tls: Emulator,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[int] = []  # a retry would back off first
    monkeypatch.setattr(Client, "_pause", lambda _self, attempt, _after: pauses.append(attempt))
    with Client(tls.url, retries=3, model="linear") as client, pytest.raises(httpx.ConnectError):
        client.infer(X)
    assert pauses == []


def test_sigv4_signed_call_goes_through(tls: Emulator) -> None:
    sent: list[dict[str, str]] = []
    sigv4 = SigV4(tls.url, region="eu-west-1", credentials=Credentials("AKID", "secret"))

    def recording(method: str, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        sent.append(sigv4(method, url, body, headers))
        return sent[-1]

    with Client(tls.url, auth=recording, verify=str(tls.tls_cert)) as client:
        result = client.infer(X)
    assert result.status == 200 and len(sent) == 2  # GET /health, then the inference
    assert all("/eu-west-1/execute-api/aws4_request" in h["Authorization"] for h in sent)


def test_probe_smoke_writes_its_report(tls: Emulator, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", tls.url, "--cacert", str(tls.tls_cert), "-n", "4", "-c", "2",
                 "--out", str(tmp_path), "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((tmp_path / "probe.json").read_text())
    assert printed == saved and saved["model"] == "linear"
    assert list(saved["variants"]) == list(VARIANTS) == list(VARIANT_NAMES)
    for name, variant in saved["variants"].items():
        assert variant["ok"] == 4 and variant["errors"] == 0, name
        assert {"total", "connect", "network", "server inference"} <= set(variant["stages"])
    assert saved["variants"]["new connection"]["new_connections"] == 4
    assert saved["comparisons"]["HTTP/2 / HTTP/1.1, total p50"].startswith("not spoken")
    assert "keep-alive: HTTP/1.1" in (tmp_path / "probe.txt").read_text()
    assert (tmp_path / "probe.png").stat().st_size > 1000


def test_probe_unreachable_url_is_a_clear_exit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "http://127.0.0.1:9", "-n", "1"]) == 2
    assert "onnx-lambda probe:" in capsys.readouterr().err


def test_probe_of_a_self_signed_server_names_cacert(tls: Emulator,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", tls.url, "-n", "1"]) == 2
    err = capsys.readouterr().err
    assert "CERTIFICATE_VERIFY_FAILED" in err
    assert "pass --cacert PEM" in err and "TLS: self-signed certificate PATH" in err
