"""X-Ray subsegments for each request's stages (``ONNX_LAMBDA_TRACING=on``; the template's
``Tracing`` parameter sets it together with active tracing).

Imported by ``handler.app`` only when tracing is on: the X-Ray SDK imports botocore, which adds
a few hundred milliseconds to the cold start (measured in docs/how-to/observability.md,
"Tracing"). The
stages are not timed twice: after each request, the telemetry's own durations become one
``request`` subsegment with a child per stage, back-dated to when each stage ran, under the
segment Lambda opens for the invocation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from aws_xray_sdk.core import xray_recorder  # why lazily

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The consecutive stages the service marks (telemetry.StageTimer), in the order they run
# ("queue" precedes the invocation and "total" spans them all: both are annotations, not
# subsegments).
STAGES = ("decode", "cache", "inference", "encode")


def install(telemetry: Any) -> None:
    """Record every business request ``telemetry.request`` reports as subsegments too."""
    xray_recorder.configure(service="onnx-lambda", context_missing="IGNORE_ERROR")
    telemetry.request = traced(telemetry.request)


def traced(request: Callable[..., str]) -> Callable[..., str]:
    """``Telemetry.request``, recording."""

    def record_and_log(durations: Mapping[str, float], **fields: Any) -> str:
        timing = request(durations, **fields)  # the Server-Timing header
        record(durations, time.time(), fields)
        return timing

    return record_and_log


def record(durations: Mapping[str, float], end: float, fields: Mapping[str, Any]) -> None:
    """Subsegments ending at ``end`` (epoch seconds); no-op without a trace context (local runs,
    an unsampled request)."""
    start = end - durations.get("total", 0.0) / 1000.0
    parent = xray_recorder.begin_subsegment("request")
    if parent is None:
        return
    parent.start_time = start
    parent.put_annotation("coldStart", bool(fields.get("cold")))
    parent.put_annotation("status", int(fields.get("status", 0)))
    if fields.get("path"):
        parent.put_annotation("path", str(fields["path"]))
    if fields.get("error_type"):
        parent.put_annotation("errorType", str(fields["error_type"]))
    parent.put_metadata("durationsMs", dict(durations), "onnx-lambda")
    cursor = start
    for stage in STAGES:
        if stage in durations:
            child = xray_recorder.begin_subsegment(stage)
            if child is not None:
                child.start_time = cursor
            cursor += durations[stage] / 1000.0
            xray_recorder.end_subsegment(min(cursor, end))
    xray_recorder.end_subsegment(end)
