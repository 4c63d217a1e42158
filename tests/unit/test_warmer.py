"""The warmer against a stubbed Lambda API (botocore Stubber): fan-out, qualifier, backoff on
throttling, report aggregation, EMF."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from handler import warmer

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


def expected(config: warmer.WarmConfig) -> dict[str, Any]:
    params = {"FunctionName": config.target, "InvocationType": "RequestResponse",
              "Payload": json.dumps({"warmer": True, "holdMs": config.hold_ms}).encode()}
    if config.qualifier:
        params["Qualifier"] = config.qualifier
    return params


def throttle(stub: Stubber) -> None:
    stub.add_client_error("invoke", service_error_code="TooManyRequestsException",
                          http_status_code=429)


def test_warm_fans_out_one_ping_per_environment_to_the_alias(client: Any, stub: Stubber) -> None:
    config = warmer.WarmConfig(target=TARGET, concurrency=3, hold_ms=150)
    for environment, cold in (("a", True), ("b", False), ("c", True)):
        stub.add_response("invoke", answer(environment, cold), expected(config))
    report = warmer.warm(config, client, sleep=lambda _: None)
    assert report["asked"] == 3
    assert report["answered"] == 3
    assert report["environments"] == 3
    assert report["environmentIds"] == ["a", "b", "c"]
    assert report["cold"] == 2
    assert report["failed"] == report["retries"] == 0
    assert report["qualifier"] == "live"


def test_empty_qualifier_invokes_unqualified(client: Any, stub: Stubber) -> None:
    config = warmer.WarmConfig(target=TARGET, qualifier="")
    stub.add_response("invoke", answer("a"), expected(config))
    assert warmer.ping(client, config).answer is not None


def test_throttled_pings_back_off_exponentially_then_succeed(
        client: Any, stub: Stubber) -> None:
    config = warmer.WarmConfig(target=TARGET, base_delay_s=0.05, max_delay_s=0.08)
    throttle(stub)
    throttle(stub)
    throttle(stub)
    stub.add_response("invoke", answer("a"), expected(config))
    sleeps: list[float] = []
    result = warmer.ping(client, config, sleep=sleeps.append, rand=lambda: 1.0)
    assert result.attempts == 4
    assert result.answer is not None and result.answer["environmentId"] == "a"
    assert sleeps == [0.05, 0.08, 0.08]  # doubled, then capped


def test_backoff_is_jittered_below_the_exponential_bound() -> None:
    config = warmer.WarmConfig(target=TARGET, base_delay_s=0.1, max_delay_s=10.0)
    assert warmer.backoff_delay(3, config, rand=lambda: 0.5) == pytest.approx(0.2)
    assert warmer.backoff_delay(1, config, rand=lambda: 0.0) == 0.0


def test_throttling_gives_up_after_max_attempts(client: Any, stub: Stubber) -> None:
    config = warmer.WarmConfig(target=TARGET, max_attempts=3)
    for _ in range(3):
        throttle(stub)
    sleeps: list[float] = []
    result = warmer.ping(client, config, sleep=sleeps.append)
    assert (result.attempts, result.answer, result.error) == (3, None,
                                                              "TooManyRequestsException")
    assert len(sleeps) == 2


def test_other_errors_are_not_retried(client: Any, stub: Stubber) -> None:
    stub.add_client_error("invoke", service_error_code="ResourceNotFoundException",
                          http_status_code=404)
    result = warmer.ping(client, warmer.WarmConfig(target=TARGET), sleep=pytest.fail)
    assert (result.attempts, result.error) == (1, "ResourceNotFoundException")


def test_function_error_and_non_ping_answers_are_failures(client: Any, stub: Stubber) -> None:
    config = warmer.WarmConfig(target=TARGET)
    crash = b'{"errorMessage": "boom", "errorType": "Runtime.InitError"}'
    stub.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled",
                                 "Payload": StreamingBody(io.BytesIO(crash), len(crash))})
    business = b'{"statusCode": 404}'
    stub.add_response("invoke", {"StatusCode": 200,
                                 "Payload": StreamingBody(io.BytesIO(business), len(business))})
    first, second = warmer.ping(client, config), warmer.ping(client, config)
    assert first.error is not None and first.error.startswith("FunctionError")
    assert second.error is not None and "not a warm-up answer" in second.error


def test_report_counts_distinct_environments_cold_starts_failures_and_retries() -> None:
    config = warmer.WarmConfig(target=TARGET, concurrency=4)
    results = [
        warmer.PingResult(attempts=1, answer={"warm": True, "environmentId": "a",
                                              "coldStart": True}),
        warmer.PingResult(attempts=3, answer={"warm": True, "environmentId": "a",
                                              "coldStart": False}),
        warmer.PingResult(attempts=1, answer={"warm": True, "environmentId": "b",
                                              "coldStart": False}),
        warmer.PingResult(attempts=5, error="TooManyRequestsException"),
    ]
    report = warmer.summarize(config, results, elapsed_ms=12.345)
    assert report["asked"] == 4
    assert report["answered"] == 3
    assert report["environments"] == 2  # two pings landed on "a": the hold was too short
    assert report["cold"] == 1
    assert report["failed"] == 1
    assert report["retries"] == 6
    assert report["errors"] == ["TooManyRequestsException"]
    assert report["elapsedMs"] == 12.3


def test_emf_line_carries_the_report_counts_under_the_target_function() -> None:
    config = warmer.WarmConfig(
        target="arn:aws:lambda:us-east-1:123456789012:function:digits:live", namespace="Ns")
    report = {"asked": 4, "environments": 3, "cold": 1, "failed": 1, "retries": 2}
    document = json.loads(warmer.emf_line(config, report, now_ms=1_700_000_000_000))
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert document["_aws"]["Timestamp"] == 1_700_000_000_000
    assert directive["Namespace"] == "Ns"
    assert directive["Dimensions"] == [["FunctionName"]]
    assert document["FunctionName"] == "digits"
    values = {m["Name"]: document[m["Name"]] for m in directive["Metrics"]}
    assert values == {"WarmerAsked": 4, "WarmerEnvironments": 3, "WarmerColdStarts": 1,
                      "WarmerFailures": 1, "WarmerRetries": 2}
    assert all(m["Unit"] == "Count" for m in directive["Metrics"])


def test_config_from_environment() -> None:
    config = warmer.WarmConfig.from_env({
        "ONNX_LAMBDA_WARM_TARGET": TARGET, "ONNX_LAMBDA_WARM_QUALIFIER": "blue",
        "ONNX_LAMBDA_WARM_CONCURRENCY": "7", "ONNX_LAMBDA_WARM_HOLD_MS": "250",
        "ONNX_LAMBDA_METRICS_NAMESPACE": "Digits"})
    assert (config.target, config.qualifier, config.concurrency, config.hold_ms,
            config.namespace) == (TARGET, "blue", 7, 250, "Digits")
    assert config.function_name == TARGET
    defaults = warmer.WarmConfig.from_env({"ONNX_LAMBDA_WARM_TARGET": TARGET})
    assert (defaults.qualifier, defaults.concurrency, defaults.hold_ms) == ("live", 1, 100)


@pytest.mark.parametrize("env", [
    {},
    {"ONNX_LAMBDA_WARM_TARGET": TARGET, "ONNX_LAMBDA_WARM_CONCURRENCY": "0"},
    {"ONNX_LAMBDA_WARM_TARGET": TARGET, "ONNX_LAMBDA_WARM_HOLD_MS": "1001"},
])
def test_invalid_configuration_fails_loudly(env: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        warmer.WarmConfig.from_env(env)


def test_handler_returns_the_report_and_prints_one_emf_line(
        client: Any, stub: Stubber, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ONNX_LAMBDA_WARM_TARGET", TARGET)
    monkeypatch.setenv("ONNX_LAMBDA_WARM_CONCURRENCY", "2")
    monkeypatch.setattr(warmer, "make_client", lambda concurrency: client)
    config = warmer.WarmConfig.from_env({"ONNX_LAMBDA_WARM_TARGET": TARGET})
    stub.add_response("invoke", answer("a"), expected(config))
    stub.add_response("invoke", answer("b"), expected(config))
    report = warmer.handler({"source": "aws.events"}, None)
    assert report["environments"] == 2
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    emf = [line for line in lines if "_aws" in line]
    assert len(emf) == 1 and emf[0]["WarmerEnvironments"] == 2
