"""Property tests: every event source and every JSON request form, fuzzed. Real sample events
(events/) and valid request bodies have random fields replaced by random
JSON-ish values; whatever comes in, the handler returns (never raises), in the detected
source's shape, below 500 (the tiny linear model never fails at run time), with a strict
RFC 8259 JSON body."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handler import sources
from handler.codecs.v2 import HEADER_LENGTH
from tests.conftest import EVENTS, Context
from tests.functional.test_handler_errors import http_event
from tests.functional.test_handler_hostile import strict_json

FIXTURES = sorted(EVENTS.glob("*.json"))
SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
SERVER_ERRORS = {"InternalError", "InferenceFailed", "ResponseTooLarge"}

scalars = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70)
           | st.floats() | st.text(max_size=8) | st.sampled_from(
               ["", "/", "2.0", "POST", "GET", "application/json", "application/x-npy",
                "/predict", "/v2/models/linear/infer", "true", "²", "NaN", "1e400"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=8)


def load(path: Path) -> dict[str, Any]:
    event = json.loads(path.read_text())
    event.pop("holdMs", None)  # a warm-up ping's hold would only slow the test down
    return event


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key / index path in a JSON value (the value's own fields, at every depth)."""
    found = []
    items = (value.items() if isinstance(value, dict)
             else enumerate(value) if isinstance(value, list) else ())
    for key, child in items:
        found.append((*prefix, key))
        found += paths(child, (*prefix, key))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with a few of its fields replaced by random values or removed."""
    value = json.loads(json.dumps(base))
    candidates = paths(value)
    for path in draw(st.lists(st.sampled_from(candidates), max_size=4)) if candidates else ():
        parent = value
        try:
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.integers(0, 4)) == 0:
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(json_values)
        except (KeyError, IndexError, TypeError):  # an earlier change removed this path
            continue
    return value


def check_answer(event: Any, result: Any) -> None:
    """The answer is in the shape of the source that claims ``event``, below 500, strict JSON."""
    source = sources.detect(event).name
    if source == "direct":
        assert isinstance(result, dict | list), result
        strict_json(json.dumps(result))  # what the runtime client will send
        error = result.get("error") if isinstance(result, dict) else None
        assert not isinstance(error, dict) or error.get("type") not in SERVER_ERRORS, result
        return
    assert isinstance(result, dict) and isinstance(result["statusCode"], int), result
    assert result["statusCode"] < 500, result
    assert isinstance(result["isBase64Encoded"], bool) and isinstance(result["body"], str)
    headers = result.get("headers") or {
        k: v[-1] for k, v in result["multiValueHeaders"].items()}
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    assert headers["x-request-id"] == "fuzz"
    if source == "rest-api":
        assert "multiValueHeaders" in result
    if source == "alb":
        assert result["statusDescription"].startswith(str(result["statusCode"]))
    if not result["isBase64Encoded"]:
        strict_json(result["body"])
    elif headers.get("content-type") == "application/octet-stream" and HEADER_LENGTH in headers:
        strict_json(base64.b64decode(result["body"])[:int(headers[HEADER_LENGTH])])


def invoke(service: Any, event: Any) -> Any:
    result = service(event, Context("fuzz"))
    check_answer(event, result)
    return result


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fuzzed_events_never_raise_or_5xx(linear_service: Any, fixture: Path) -> None:
    base = load(fixture)

    @SETTINGS
    @given(event=mutated(base))
    def run(event: Any) -> None:
        invoke(linear_service, event)

    run()


X = [1.0, 2.0, 3.0, 4.0]
SIMPLE = {"inputs": [X], "parameters": {"outputs": ["y"]}}
V2 = {"id": "r", "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": X,
                             "parameters": {}}],
      "outputs": [{"name": "y", "parameters": {"binary_data": False}}],
      "parameters": {"binary_data_output": False}}
V2_BINARY = {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                         "parameters": {"binary_data_size": 16}}],
             "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}


def _text(body: Any) -> str:
    return json.dumps(body)  # NaN / Infinity from random floats: the handler must refuse them


FORMS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "simple-http": (SIMPLE, lambda body: http_event(body=_text(body))),
    "simple-direct": (SIMPLE, lambda body: body),
    "v2-http": (V2, lambda body: http_event(path="/v2/models/linear/infer", body=_text(body))),
    "v2-direct": (V2, lambda body: body),
    "v2-binary": (V2_BINARY, lambda body: http_event(
        path="/v2/models/linear/infer", body=_text(body).encode() + struct.pack("<4f", *X),
        headers={HEADER_LENGTH: str(len(_text(body).encode()))})),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_fuzzed_request_bodies_never_raise_or_5xx(linear_service: Any, form: str) -> None:
    base, wrap = FORMS[form]

    @SETTINGS
    @given(body=mutated(base))
    def run(body: Any) -> None:
        invoke(linear_service, wrap(body))

    run()
