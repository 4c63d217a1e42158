"""``Service.stream`` (what ``handler.app.stream_handler`` returns under
``handler.stream_runtime``) on the real handler: every route's buffered answer as a one-chunk
stream, status, headers and body unchanged; an error answer too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handler.streaming import StreamedResponse, prelude
from tests.conftest import Context
from tests.functional.test_handler_answers import http_api


def test_a_route_streams_its_buffered_answer_as_one_chunk(make_service: Callable[..., Any],
                                                          model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    body = json.dumps({"inputs": [[0.0, 1.5, -2.25, 3.0]]})
    buffered = service(http_api(body), Context("r1"))
    streamed = service.stream(http_api(body), Context("r2"))
    assert isinstance(streamed, StreamedResponse) and streamed.status == 200
    (chunk,) = streamed.chunks
    assert json.loads(chunk) == json.loads(buffered["body"])
    assert streamed.headers["content-type"] == buffered["headers"]["content-type"]
    assert "server-timing" in streamed.headers
    head = json.loads(prelude(streamed)[:-8])
    assert head["statusCode"] == 200 and head["headers"] == streamed.headers


def test_an_error_answer_streams_with_its_status(make_service: Callable[..., Any],
                                                 model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    streamed = service.stream(http_api('{"inputs": "nope"}'), Context("r3"))
    assert 400 <= streamed.status < 500
    (chunk,) = streamed.chunks
    assert json.loads(chunk)["requestId"] == "r3"
