"""Content codings through the handler, on the real events (events/, from ``sam local
generate-event``): large JSON answers gzip-compressed for HTTP API, Function URL and ALB
clients that accept it, nothing else changed; gzip and deflate request bodies undone."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import cold
from onnx_lambda.source_tree import root
from tests.conftest import EVENTS, Context
from tests.support import models

ROWS = np.random.default_rng(7).standard_normal((40, 30)).astype(np.float32)  # ~12 KB of JSON
HTTP_SOURCES = ["linear-http-api-predict.json", "linear-function-url-predict.json",
                "linear-alb-predict.json"]


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.identity(tmp_path_factory.mktemp("echo") / "echo.onnx", "float32", 2)


@pytest.fixture
def service(make_service: Any, echo: Path) -> Any:
    return make_service(echo)


def event(name: str, body: bytes, headers: dict[str, str], *, base64_body: bool = False,
          ) -> dict[str, Any]:
    found = json.loads((EVENTS / name).read_text())
    found["headers"] = headers
    found["body"] = base64.b64encode(body).decode() if base64_body else body.decode()
    found["isBase64Encoded"] = base64_body
    return found


def predict(service: Any, name: str, headers: dict[str, str], rows: np.ndarray = ROWS,
            ) -> dict[str, Any]:
    body = json.dumps({"inputs": rows.tolist()}).encode()
    result = service(event(name, body, {"content-type": "application/json", **headers}),
                     Context())
    assert result["statusCode"] == 200, result
    return result


def body_of(result: dict[str, Any]) -> bytes:
    raw = result["body"]
    return base64.b64decode(raw) if result["isBase64Encoded"] else raw.encode()


def headers_of(result: dict[str, Any]) -> dict[str, str]:
    return result.get("headers") or {k: v[0] for k, v in result["multiValueHeaders"].items()}


@pytest.mark.parametrize("name", HTTP_SOURCES)
def test_a_large_answer_is_gzipped_for_a_client_that_accepts_it(service: Any, name: str) -> None:
    plain = predict(service, name, {})
    packed = predict(service, name, {"accept-encoding": "gzip, deflate, br"})
    headers = headers_of(packed)
    assert packed["isBase64Encoded"] is True
    assert headers["content-encoding"] == "gzip"
    assert headers["content-type"] == "application/json"
    assert headers["vary"] == "accept-encoding"
    assert "encode;dur=" in headers["server-timing"]
    text = gzip.decompress(body_of(packed))
    assert text == body_of(plain)  # the same JSON, byte for byte
    assert np.array_equal(np.array(json.loads(text)["outputs"]["y"], np.float32), ROWS)
    assert len(packed["body"]) < len(plain["body"]) * 0.75  # smaller even in base64


def test_vary_is_sent_on_the_plain_answer_too(service: Any) -> None:
    plain = predict(service, "linear-http-api-predict.json", {"accept-encoding": "identity"})
    assert plain["isBase64Encoded"] is False
    assert "content-encoding" not in plain["headers"]
    assert plain["headers"]["vary"] == "accept-encoding"


def test_a_small_answer_is_never_compressed(service: Any) -> None:
    small = predict(service, "linear-http-api-predict.json", {"accept-encoding": "gzip"},
                    rows=ROWS[:1, :4])
    assert small["isBase64Encoded"] is False
    assert not {"content-encoding", "vary"} & set(small["headers"])


def test_rest_api_answers_are_left_to_the_rest_api(service: Any) -> None:
    # REST APIs compress on their own and decode base64 only for their binaryMediaTypes
    result = predict(service, "linear-rest-api-predict.json", {"Accept-Encoding": "gzip"})
    assert result["isBase64Encoded"] is False
    assert "content-encoding" not in result["headers"]
    assert len(json.loads(result["body"])["outputs"]["y"]) == len(ROWS)


def test_a_direct_invocation_gets_its_payload(service: Any) -> None:
    result = service({"inputs": ROWS.tolist()}, Context())
    assert np.array_equal(np.array(result["outputs"]["y"], np.float32), ROWS)


def test_the_threshold_and_off(make_service: Any, echo: Path) -> None:
    accept = {"accept-encoding": "gzip"}
    never = make_service(echo, gzip_min_bytes="0")
    assert predict(never, "linear-http-api-predict.json", accept)["isBase64Encoded"] is False
    always = make_service(echo, gzip_min_bytes="1")
    tiny = predict(always, "linear-http-api-predict.json", accept, rows=ROWS[:1, :4])
    # compressing a ~100-byte answer would save nothing once base64-encoded: left as it is
    assert tiny["isBase64Encoded"] is False and tiny["headers"]["vary"] == "accept-encoding"
    six = predict(always, "linear-http-api-predict.json", accept, rows=ROWS[:6])
    assert six["headers"]["content-encoding"] == "gzip"


def test_a_cached_answer_is_compressed_per_client(make_service: Any, echo: Path) -> None:
    cached = make_service(echo, cache_size="4")
    name = "linear-http-api-predict.json"
    first = predict(cached, name, {"accept-encoding": "gzip"})
    again = predict(cached, name, {})  # a hit: served plain to a client without gzip
    third = predict(cached, name, {"accept-encoding": "gzip"})
    assert "cache;dur=" in again["headers"]["server-timing"]
    assert again["isBase64Encoded"] is False
    assert gzip.decompress(body_of(first)) == body_of(again) == gzip.decompress(body_of(third))


def test_v2_json_answers_are_compressed_binary_ones_are_not(service: Any) -> None:
    doc = {"inputs": [{"name": "x", "shape": list(ROWS.shape), "datatype": "FP32",
                       "data": ROWS.ravel().tolist()}]}
    found = event("linear-http-api-predict.json", json.dumps(doc).encode(),
                  {"content-type": "application/json", "accept-encoding": "gzip"})
    found["rawPath"] = found["requestContext"]["http"]["path"] = "/v2/models/echo/infer"
    result = service(found, Context())
    assert result["headers"]["content-encoding"] == "gzip"
    answer = json.loads(gzip.decompress(body_of(result)))
    assert np.array_equal(np.array(answer["outputs"][0]["data"], np.float32), ROWS.ravel())
    doc["parameters"] = {"binary_data_output": True}
    found["body"] = json.dumps(doc)
    binary = service(found, Context())
    assert binary["headers"]["content-type"] == "application/octet-stream"
    assert "content-encoding" not in binary["headers"]


@pytest.mark.parametrize(("coding", "pack"), [
    ("gzip", gzip.compress), ("deflate", zlib.compress), ("x-gzip", gzip.compress)])
def test_a_coded_request_body_is_undone(service: Any, coding: str, pack: Any) -> None:
    body = pack(json.dumps({"inputs": ROWS.tolist()}).encode())
    result = service(event("linear-http-api-predict.json", body, {
        "content-type": "application/json", "content-encoding": coding}, base64_body=True),
        Context())
    assert result["statusCode"] == 200, result["body"]
    assert np.array_equal(np.array(json.loads(result["body"])["outputs"]["y"], np.float32), ROWS)


@pytest.mark.parametrize(("coding", "body", "status", "kind"), [
    ("br", b"\x0b\x02\x80{}\x03", 415, "UnsupportedMediaType"),
    ("gzip", b'{"inputs": [[1.0]]}', 400, "BadRequest"),
    ("gzip", gzip.compress(b'{"inputs": [[1.0]]}', mtime=0)[:-9], 400, "BadRequest"),
    # 3 MB over a 2 MB limit (mtime=0 here and above: the same test id in every xdist worker)
    ("gzip", gzip.compress(bytes(3 << 20), mtime=0), 413, "PayloadTooLarge"),
])
def test_a_bad_coded_body_is_a_clear_4xx(make_service: Any, echo: Path, coding: str,
                                         body: bytes, status: int, kind: str) -> None:
    service = make_service(echo, max_payload_bytes=str(2 << 20))
    result = service(event("linear-http-api-predict.json", body, {
        "content-type": "application/json", "content-encoding": coding}, base64_body=True),
        Context())
    assert result["statusCode"] == status
    assert json.loads(result["body"])["error"]["type"] == kind
    ok = predict(service, "linear-http-api-predict.json", {})  # the environment serves on
    assert len(json.loads(ok["body"])["outputs"]["y"]) == len(ROWS)


def test_zlib_stays_off_the_cold_path(echo: Path) -> None:
    """Imported by the first large answer to a gzip client: not at init, not for small ones
    (a fresh ``python -S``, as Lambda starts the runtime; the event written out by hand)."""
    program = (
        "import json, sys\n"
        "def loaded():\n"
        "    return [m in sys.modules for m in ('zlib', 'handler.compression')]\n"
        "import handler.app as app\n"
        "def ask(rows):\n"
        "    answer = app.handler({'version': '2.0', 'rawPath': '/predict', 'headers': {\n"
        "        'content-type': 'application/json', 'accept-encoding': 'gzip'},\n"
        "        'requestContext': {'http': {'method': 'POST'}, 'stage': '$default'},\n"
        "        'body': json.dumps({'inputs': [[0.5] * 30] * rows})}, None)\n"
        "    return answer['headers'].get('content-encoding')\n"
        "init = loaded()\n"
        "small = ask(1), loaded()\n"
        "large = ask(40), loaded()\n"
        "print('=>', json.dumps([init, small, large]))\n")
    prefix, base = cold.interpreter()
    env = {**os.environ, **base, "ONNX_LAMBDA_MODEL": str(echo),
           "ONNX_LAMBDA_LOG_LEVEL": "warning"}
    out = subprocess.run([*prefix, "-c", program], capture_output=True, text=True, check=True,
                         env=env, cwd=root()).stdout
    line = next(line for line in out.splitlines() if line.startswith("=> "))
    assert json.loads(line[3:]) == [[False, False], [None, [False, False]],
                                    ["gzip", [True, True]]]
