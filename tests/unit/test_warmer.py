"""The warmer against a stubbed Lambda API (botocore Stubber): fan-out, qualifier, backoff on
throttling, report aggregation, EMF."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from tests.conftest import EVENTS
from warmer import app, fanout, metric_names
from warmer.settings import WarmConfig

TARGET = "onnx-lambda-InferenceFunction-abc"


@pytest.fixture
def client() -> Any:
    return boto3.client("lambda", region_name="us-east-1", aws_access_key_id="test",
                        aws_secret_access_key="test")


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def answer(environment: str, cold: bool = False) -> dict[str, Any]:
    body = json.dumps({"warm": True, "environmentId": environment, "coldStart": cold,
                       "initializationType": "on-demand", "uptimeMs": 1.0,
                       "requestsServed": 0, "inferenceMs": 0.1, "heldMs": 100.0}).encode()
    return {"StatusCode": 200, "Payload": StreamingBody(io.BytesIO(body), len(body))}


def expected(config: WarmConfig) -> dict[str, Any]:
    params = {"FunctionName": config.target, "InvocationType": "RequestResponse",
              "Payload": json.dumps({"warmer": True, "holdMs": config.hold_ms}).encode()}
    if config.qualifier:
        params["Qualifier"] = config.qualifier
    return params


def throttle(stub: Stubber) -> None:
    stub.add_client_error("invoke", service_error_code="TooManyRequestsException",
                          http_status_code=429)


def test_warm_fans_out_one_ping_per_environment_to_the_alias(client: Any, stub: Stubber) -> None:
    config = WarmConfig(target=TARGET, concurrency=3, hold_ms=150)
    for environment, cold in (("a", True), ("b", False), ("c", True)):
        stub.add_response("invoke", answer(environment, cold), expected(config))
    report = fanout.warm(config, client, sleep=lambda _: None)
    assert report["asked"] == 3
    assert report["answered"] == 3
    assert report["environments"] == 3
    assert report["environmentIds"] == ["a", "b", "c"]
    assert report["cold"] == 2
    assert report["failed"] == report["retries"] == 0
    assert report["qualifier"] == "live"


def test_empty_qualifier_invokes_unqualified(client: Any, stub: Stubber) -> None:
    config = WarmConfig(target=TARGET, qualifier="")
    stub.add_response("invoke", answer("a"), expected(config))
    assert fanout.ping(client, config).answer is not None


def test_throttled_pings_back_off_exponentially_then_succeed(
        client: Any, stub: Stubber) -> None:
    config = WarmConfig(target=TARGET, base_delay_s=0.05, max_delay_s=0.08)
    throttle(stub)
    throttle(stub)
    throttle(stub)
    stub.add_response("invoke", answer("a"), expected(config))
    sleeps: list[float] = []
    result = fanout.ping(client, config, sleep=sleeps.append, rand=lambda: 1.0)
    assert result.attempts == 4
    assert result.answer is not None and result.answer["environmentId"] == "a"
    assert sleeps == [0.05, 0.08, 0.08]  # doubled, then capped


def test_backoff_is_jittered_below_the_exponential_bound() -> None:
    config = WarmConfig(target=TARGET, base_delay_s=0.1, max_delay_s=10.0)
    assert fanout.backoff_delay(3, config, rand=lambda: 0.5) == pytest.approx(0.2)
    assert fanout.backoff_delay(1, config, rand=lambda: 0.0) == 0.0


def test_throttling_gives_up_after_max_attempts(client: Any, stub: Stubber) -> None:
    config = WarmConfig(target=TARGET, max_attempts=3)
    for _ in range(3):
        throttle(stub)
    sleeps: list[float] = []
    result = fanout.ping(client, config, sleep=sleeps.append)
    assert (result.attempts, result.answer, result.error) == (3, None,
                                                              "TooManyRequestsException")
    assert len(sleeps) == 2


def test_other_errors_are_not_retried(client: Any, stub: Stubber) -> None:
    stub.add_client_error("invoke", service_error_code="ResourceNotFoundException",
                          http_status_code=404)
    result = fanout.ping(client, WarmConfig(target=TARGET), sleep=pytest.fail)
    assert (result.attempts, result.error) == (1, "ResourceNotFoundException")


def test_an_unreachable_endpoint_is_a_failed_ping_not_a_crash(client: Any) -> None:
    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")

    client.meta.events.register("before-send.lambda.Invoke", unreachable)
    config = WarmConfig(target=TARGET, concurrency=2)
    report = fanout.warm(config, client, sleep=pytest.fail)
    assert (report["answered"], report["failed"], report["retries"]) == (0, 2, 0)
    (error,) = report["errors"]
    assert error.startswith("EndpointConnectionError") and "127.0.0.1:9" in error


def test_function_error_and_non_ping_answers_are_failures(client: Any, stub: Stubber) -> None:
    config = WarmConfig(target=TARGET)
    crash = b'{"errorMessage": "boom", "errorType": "Runtime.InitError"}'
    stub.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled",
                                 "Payload": StreamingBody(io.BytesIO(crash), len(crash))})
    business = b'{"statusCode": 404}'
    stub.add_response("invoke", {"StatusCode": 200,
                                 "Payload": StreamingBody(io.BytesIO(business), len(business))})
    first, second = fanout.ping(client, config), fanout.ping(client, config)
    assert first.error is not None and first.error.startswith("FunctionError")
    assert second.error is not None and "not a warm-up answer" in second.error


def test_report_counts_distinct_environments_cold_starts_failures_and_retries() -> None:
    config = WarmConfig(target=TARGET, concurrency=4)
    results = [
        fanout.PingResult(attempts=1, answer={"warm": True, "environmentId": "a",
                                              "coldStart": True}),
        fanout.PingResult(attempts=3, answer={"warm": True, "environmentId": "a",
                                              "coldStart": False}),
        fanout.PingResult(attempts=1, answer={"warm": True, "environmentId": "b",
                                              "coldStart": False}),
        fanout.PingResult(attempts=5, error="TooManyRequestsException"),
    ]
    report = fanout.summarize(config, results, elapsed_ms=12.345)
    assert report["asked"] == 4
    assert report["answered"] == 3
    assert report["environments"] == 2  # two pings landed on "a": the hold was too short
    assert report["cold"] == 1
    assert report["failed"] == 1
    assert report["retries"] == 6
    assert report["errors"] == ["TooManyRequestsException"]
    assert report["elapsedMs"] == 12.3


def test_metrics_are_one_emf_document_under_the_target_function(
        capsys: pytest.CaptureFixture[str]) -> None:
    config = WarmConfig(
        target="arn:aws:lambda:us-east-1:123456789012:function:digits:live", namespace="Ns")
    report = {"asked": 4, "environments": 3, "cold": 1, "failed": 1, "retries": 2,
              "throttled": 2}
    app.publish_metrics(config, report)
    (document,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert isinstance(document["_aws"]["Timestamp"], int)
    assert directive["Namespace"] == "Ns"
    assert directive["Dimensions"] == [["FunctionName"]]  # the handler's dimension, no "service"
    assert document["FunctionName"] == "digits"
    values = {m["Name"]: document[m["Name"]] for m in directive["Metrics"]}
    assert values == {"EnvironmentsAsked": [4.0], "EnvironmentsReached": [3.0],
                      "ColdEnvironmentsFound": [1.0], "Throttled": [2.0], "PingsFailed": [1.0]}
    assert set(values) == metric_names.WARMER
    assert all(m["Unit"] == "Count" for m in directive["Metrics"])


def test_throttles_are_counted_per_ping_including_a_final_one(
        client: Any, stub: Stubber) -> None:
    config = WarmConfig(target=TARGET, max_attempts=2)
    throttle(stub)
    stub.add_response("invoke", answer("a"), expected(config))
    throttle(stub)
    throttle(stub)
    results = [fanout.ping(client, config, sleep=lambda _: None) for _ in range(2)]
    assert [r.throttled for r in results] == [1, 2]
    assert fanout.summarize(config, results, 1.0)["throttled"] == 3


def test_handler_logs_each_ping_with_the_correlation_id_and_emits_the_metrics(
        client: Any, stub: Stubber, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ONNX_LAMBDA_WARM_TARGET", TARGET)
    monkeypatch.setenv("ONNX_LAMBDA_WARM_CONCURRENCY", "2")
    monkeypatch.setattr(fanout, "make_client", lambda concurrency: client)
    config = WarmConfig.from_env({"ONNX_LAMBDA_WARM_TARGET": TARGET})
    for environment in ("a", "b"):
        response = {**answer(environment), "ResponseMetadata": {"RequestId": f"req-{environment}"}}
        stub.add_response("invoke", response, expected(config))
    context = SimpleNamespace(function_name="warmer", memory_limit_in_mb=256,
                              invoked_function_arn="arn:aws:lambda:us-east-1:1:function:warmer",
                              aws_request_id="warmer-request")
    event = json.loads((EVENTS / "scheduled.json").read_text())
    # Powertools' Logger holds the stdout of its import time: point it at this test's
    monkeypatch.setattr(app.logger.registered_handler, "stream", sys.stdout)
    report = app.handler(event, context)
    assert report["environments"] == 2
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (emf,) = [line for line in lines if "_aws" in line]
    assert emf["EnvironmentsReached"] == [2.0] and emf["FunctionName"] == TARGET
    pings = [line for line in lines if line.get("message") == "ping"]
    assert sorted(p["targetRequestId"] for p in pings) == ["req-a", "req-b"]
    assert sorted(p["environmentId"] for p in pings) == ["a", "b"]
    (summary,) = [line for line in lines if line.get("message") == "warmer report"]
    assert summary["environments"] == 2 and summary["level"] == "INFO"
    for line in [*pings, summary]:
        assert line["correlation_id"] == event["id"]  # the schedule event: one id per run
        assert line["function_request_id"] == "warmer-request"
