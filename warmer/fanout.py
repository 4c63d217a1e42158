"""N parallel warm-up pings and their report: the warmer's logic, shared by the Lambda entry
(``warmer.app``) and ``onnx-lambda warm``. boto3 and botocore only (the managed runtime's).

Each ping is the warm-up ping of ``docs/explanation/architecture.md``
(``{"warmer": true, "holdMs": H}``); holding for ``holdMs`` makes N concurrent pings land on N
distinct environments. Throttled pings are retried with capped, jittered exponential backoff.
The report says how many distinct environments answered out of how many were asked, and how
many of them were cold.
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from warmer.settings import WarmConfig

THROTTLE_CODES = frozenset({"TooManyRequestsException", "ThrottlingException"})


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
        except BotoCoreError as exc:  # no answer at all (endpoint unreachable, read timeout)
            return PingResult(attempt, error=f"{type(exc).__name__}: {exc}", throttled=throttled)
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


def warm(
    config: WarmConfig,
    client: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[list[PingResult]], None] | None = None,
) -> dict[str, Any]:
    """Send N pings in parallel and return the aggregated report; ``log`` sees each ping's
    result (the Lambda entry logs one line per ping; ``onnx-lambda warm`` prints the report
    only)."""
    client = client or make_client(config.concurrency)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
        futures = [pool.submit(ping, client, config, sleep) for _ in range(config.concurrency)]
        results = [future.result() for future in futures]
    if log is not None:
        log(results)
    return summarize(config, results, (time.perf_counter() - started) * 1000)

