"""Warm-up pings (never business traffic) and the in-environment result cache."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from handler.bootstrap import create
from handler.settings import Settings
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event


def test_ping_answers_identity_and_is_not_traffic(linear_service: Any) -> None:
    first = linear_service({"warmer": True, "holdMs": 5}, Context())
    assert first["warm"] is True and first["coldStart"] is True
    assert first["requestsServed"] == 0 and first["heldMs"] == 5
    assert first["initializationType"] == "on-demand"
    linear_service(http_event(), Context())
    second = linear_service({"warmer": True}, Context())
    assert second["coldStart"] is False and second["requestsServed"] == 1
    assert second["environmentId"] == first["environmentId"]
    assert second["uptimeMs"] >= first["uptimeMs"]


def test_ping_emits_no_business_metrics(linear_service: Any) -> None:
    linear_service({"warmer": True}, Context())
    lines = [json.loads(x) for x in linear_service.telemetry.stream.getvalue().splitlines()]
    assert lines and all("_aws" not in line for line in lines)


def test_first_request_after_a_ping_is_not_a_cold_start(linear_service: Any) -> None:
    linear_service({"warmer": True}, Context())
    headers = linear_service(http_event(), Context())["headers"]
    assert "cold-start" not in headers["server-timing"]


def test_first_request_reports_cold_start_and_init_breakdown(linear_service: Any) -> None:
    timing = linear_service(http_event(), Context())["headers"]["server-timing"]
    assert "cold-start" in timing and "model-load;dur=" in timing and "warmup;dur=" in timing
    timing = linear_service(http_event(), Context())["headers"]["server-timing"]
    assert "cold-start" not in timing and "model-load" not in timing


def test_hold_is_capped(linear_service: Any) -> None:
    assert linear_service({"warmer": True, "holdMs": "junk"}, Context())["heldMs"] == 0


def test_cache_serves_repeats_without_inference(make_service: Any, model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", cache_size="2")
    calls = []
    run = service.model.run
    service.model.run = lambda feeds: calls.append(1) or run(feeds)
    first = service(http_event(), Context())
    second = service(http_event(), Context())
    assert first["body"] == second["body"] and len(calls) == 1
    assert "cache;dur=" in second["headers"]["server-timing"]
    for n in (5, 6, 7):  # evicts the first entry (size 2)
        service(http_event(body=json.dumps({"inputs": [[n, 0, 0, 0]]})), Context())
    service(http_event(), Context())
    assert len(calls) == 5


def test_cache_is_off_by_default(linear_service: Any) -> None:
    calls = []
    run = linear_service.model.run
    linear_service.model.run = lambda feeds: calls.append(1) or run(feeds)
    linear_service(http_event(), Context())
    linear_service(http_event(), Context())
    assert len(calls) == 2


def test_provisioned_environment_never_reports_a_cold_start(model_dir: Path) -> None:
    service = create(Settings.from_env({
        "ONNX_LAMBDA_MODEL": str(model_dir / "linear.onnx"),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "provisioned-concurrency"}))
    service.telemetry.stream = io.StringIO()
    assert "cold-start" not in service(http_event(), Context())["headers"]["server-timing"]
    assert json.loads(service.telemetry.stream.getvalue().splitlines()[-1])["ColdStart"] == 0
    assert service({"warmer": True}, Context())["coldStart"] is False
