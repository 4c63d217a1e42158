"""The warmer function (``handler.warmer.handler``): keeps N inference environments warm.

On its schedule it invokes the inference alias N times in parallel with the warm-up ping of
``docs/architecture.md`` (``{"warmer": true, "holdMs": H}``). Each ping holds its environment
for ``holdMs`` so the N concurrent pings land on N distinct environments. Throttled pings are
retried with capped, jittered exponential backoff. The report says how many distinct
environments answered out of how many were asked, and how many of them were cold; it is
returned, logged and emitted as CloudWatch EMF metrics. Pings never count as user traffic: the
inference handler recognises them before routing.

Runs on the managed Python runtime: boto3 from the runtime, aws-lambda-powertools packaged with
it (layers/requirements-warmer.txt). Powertools' Logger and Metrics fit here, not in the
inference handler: its import (~60 ms) is paid once per warmer environment, on no user's
request. Each ping's log line carries the correlation id (the schedule event's id) and the
inference invocation's request id, which joins it to that environment's own log line.
Configuration (all optional except the target):

- ``ONNX_LAMBDA_WARM_TARGET``: the inference function's name or ARN
- ``ONNX_LAMBDA_WARM_QUALIFIER``: alias or version to warm (default ``live``; empty = unqualified)
- ``ONNX_LAMBDA_WARM_CONCURRENCY``: N, the number of environments to keep warm (default 1)
- ``ONNX_LAMBDA_WARM_HOLD_MS``: how long each ping holds its environment (default 100, max 1000)
- ``ONNX_LAMBDA_METRICS_NAMESPACE``: EMF namespace (default ``OnnxLambda``)
- ``AWS_ENDPOINT_URL_LAMBDA``: boto3's own endpoint override, e.g. the local emulator
"""

from __future__ import annotations

import functools
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config
from botocore.exceptions import ClientError

from handler.metric_names import WARMER_METRICS

MAX_HOLD_MS = 1000
THROTTLE_CODES = frozenset({"TooManyRequestsException", "ThrottlingException"})
logger = Logger(service="onnx-lambda-warmer")


@dataclass(frozen=True)
class WarmConfig:
    """What to warm (function + qualifier), how wide (N), how long each ping holds, how to retry."""

    target: str
    qualifier: str = "live"
    concurrency: int = 1
    hold_ms: int = 100
    max_attempts: int = 5
    base_delay_s: float = 0.05
    max_delay_s: float = 1.0
    namespace: str = "OnnxLambda"

    def __post_init__(self) -> None:
        if not self.target:
            raise ValueError("the warmer needs a target: set ONNX_LAMBDA_WARM_TARGET")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if not 0 <= self.hold_ms <= MAX_HOLD_MS:
            raise ValueError(f"hold must be within 0..{MAX_HOLD_MS} ms, got {self.hold_ms}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WarmConfig:
        return cls(
            target=env.get("ONNX_LAMBDA_WARM_TARGET", ""),
            qualifier=env.get("ONNX_LAMBDA_WARM_QUALIFIER", "live"),
            concurrency=int(env.get("ONNX_LAMBDA_WARM_CONCURRENCY", "1")),
            hold_ms=int(env.get("ONNX_LAMBDA_WARM_HOLD_MS", "100")),
            namespace=env.get("ONNX_LAMBDA_METRICS_NAMESPACE", "OnnxLambda"),
        )

    @property
    def function_name(self) -> str:
        """The bare function name (the EMF ``FunctionName`` dimension), also from an ARN."""
        parts = self.target.split(":")
        return parts[6] if self.target.startswith("arn:") and len(parts) > 6 else self.target


@dataclass(frozen=True)
class PingResult:
    """One ping's outcome: the handler's answer, or the error that ended its attempts."""

    attempts: int
    answer: Mapping[str, Any] | None = None
    error: str | None = None
    throttled: int = 0  # attempts answered with a throttling error
    request_id: str | None = None  # the inference invocation's, from the Lambda API


def client_config(concurrency: int) -> Config:
    """Sized for N parallel pings; retries are ours (see ``ping``), not botocore's. The read
    timeout covers a cold start of the target plus the hold."""
    return Config(max_pool_connections=max(10, concurrency), retries={"total_max_attempts": 1},
                  connect_timeout=5, read_timeout=120)


@functools.cache
def make_client(concurrency: int) -> Any:
    """Cached: a warm warmer environment reuses its client and connections."""
    return boto3.client("lambda", config=client_config(concurrency))


def backoff_delay(attempt: int, config: WarmConfig, rand: Callable[[], float]) -> float:
    """Full-jitter exponential backoff before retry ``attempt`` (1-based)."""
    return rand() * min(config.max_delay_s, config.base_delay_s * 2 ** (attempt - 1))


def ping(
    client: Any,
    config: WarmConfig,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> PingResult:
    """Invoke the target once with the warm-up ping; retry only when throttled."""
    request: dict[str, Any] = {
        "FunctionName": config.target,
        "InvocationType": "RequestResponse",
        "Payload": json.dumps({"warmer": True, "holdMs": config.hold_ms}).encode(),
    }
    if config.qualifier:
        request["Qualifier"] = config.qualifier
    throttled = 0
    for attempt in range(1, config.max_attempts + 1):
        try:
            response = client.invoke(**request)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            throttled += code in THROTTLE_CODES
            if code in THROTTLE_CODES and attempt < config.max_attempts:
                sleep(backoff_delay(attempt, config, rand))
                continue
            return PingResult(attempt, error=code or str(exc), throttled=throttled)
        request_id = response.get("ResponseMetadata", {}).get("RequestId")
        payload = response["Payload"].read()
        if response.get("FunctionError"):
            return PingResult(attempt, error=f"FunctionError: {payload[:200]!r}",
                              throttled=throttled, request_id=request_id)
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or not answer.get("warm"):
            return PingResult(attempt, error=f"not a warm-up answer: {payload[:200]!r}",
                              throttled=throttled, request_id=request_id)
        return PingResult(attempt, answer=answer, throttled=throttled, request_id=request_id)
    raise AssertionError("unreachable: the last attempt always returns")


def summarize(config: WarmConfig, results: list[PingResult], elapsed_ms: float) -> dict[str, Any]:
    """Aggregate pings into the warmer's report."""
    answers = [r.answer for r in results if r.answer is not None]
    environments = sorted({str(a.get("environmentId")) for a in answers})
    errors = sorted({r.error for r in results if r.error is not None})
    return {
        "target": config.target,
        "qualifier": config.qualifier,
        "asked": config.concurrency,
        "answered": len(answers),
        "environments": len(environments),
        "environmentIds": environments,
        "cold": sum(1 for a in answers if a.get("coldStart")),
        "failed": len(results) - len(answers),
        "retries": sum(r.attempts - 1 for r in results),
        "throttled": sum(r.throttled for r in results),
        "errors": errors,
        "elapsedMs": round(elapsed_ms, 1),
    }


def publish_metrics(config: WarmConfig, report: Mapping[str, Any]) -> None:
    """The report's counts as one EMF document (Powertools Metrics, flushed now), under the
    inference function's name: the dimension the handler's own metrics use."""
    metrics = Metrics(namespace=config.namespace)
    metrics.add_dimension(name="FunctionName", value=config.function_name)
    for key, name in WARMER_METRICS.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=report[key])
    metrics.flush_metrics()


def log_pings(results: list[PingResult]) -> None:
    """One line per ping: its inference request id joins it to the environment's log line."""
    for result in results:
        answer = result.answer or {}
        logger.info("ping", extra={
            "targetRequestId": result.request_id, "environmentId": answer.get("environmentId"),
            "coldStart": answer.get("coldStart"), "attempts": result.attempts,
            "throttled": result.throttled, "error": result.error})


def warm(
    config: WarmConfig,
    client: Any = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Send N pings in parallel and return the aggregated report."""
    client = client or make_client(config.concurrency)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
        futures = [pool.submit(ping, client, config, sleep) for _ in range(config.concurrency)]
        results = [future.result() for future in futures]
    log_pings(results)
    return summarize(config, results, (time.perf_counter() - started) * 1000)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.EVENT_BRIDGE)
def handler(event: Any, context: Any) -> dict[str, Any]:
    """Entry point: scheduled by EventBridge; only the event's id is used (the correlation id)."""
    config = WarmConfig.from_env(os.environ)
    report = warm(config)
    publish_metrics(config, report)
    logger.info("warmer report", extra=report)
    return report
