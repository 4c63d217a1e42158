"""The warmer function's Lambda entry (``warmer.app.handler``), scheduled by EventBridge.

Powertools' Logger and Metrics fit here, not in the inference handler: their import (~60 ms)
is paid once per warmer environment, on no user's request. Each ping's log line carries the
correlation id (the schedule event's id) and the inference invocation's request id, which
joins it to that environment's own log line. The report is returned, logged and emitted as
one EMF document. Pings never count as user traffic: the inference handler recognises them
before routing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from warmer.fanout import PingResult, warm
from warmer.metric_names import WARMER_METRICS
from warmer.settings import WarmConfig

logger = Logger(service="onnx-lambda-warmer")


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


@logger.inject_lambda_context(correlation_id_path=correlation_paths.EVENT_BRIDGE)
def handler(event: Any, context: Any) -> dict[str, Any]:
    """Only the event's id is used (the correlation id)."""
    config = WarmConfig.from_env(os.environ)
    report = warm(config, log=log_pings)
    publish_metrics(config, report)
    logger.info("warmer report", extra=report)
    return report
