"""Where every millisecond goes: stage timer, ``Server-Timing`` header, and one JSON line per
request that is both the structured log record and a CloudWatch EMF metrics document.

EMF is written by hand (the spec is one JSON object with an ``_aws`` member) rather than with
Powertools Metrics: the same output without Powertools' import cost on the cold path (measured
in the README's cold-start table).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

# Server-Timing metric name → EMF metric name (Milliseconds)
STAGE_METRICS = {
    "queue": "QueueTime",
    "decode": "Decode",
    "inference": "Inference",
    "encode": "Encode",
    "total": "Latency",
}
INIT_METRICS = {"init": "InitDuration", "model-load": "ModelLoad"}
COLD_METRICS = {**STAGE_METRICS, **INIT_METRICS}
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)


class StageTimer:
    """Consecutive stages measured with ``perf_counter``: ``mark("decode")`` closes a stage."""

    __slots__ = ("_last", "durations", "start")

    def __init__(self) -> None:
        self.start = self._last = time.perf_counter()
        self.durations: dict[str, float] = {}

    def mark(self, stage: str) -> None:
        now = time.perf_counter()
        self.durations[stage] = self.durations.get(stage, 0.0) + (now - self._last) * 1000.0
        self._last = now

    def total_ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000.0


def server_timing(durations: Mapping[str, float], cold: bool) -> str:
    parts = [f"{name};dur={ms:.3f}" for name, ms in durations.items()]
    if cold:
        parts.append('cold-start;desc="first request of this environment"')
    return ", ".join(parts)


class Telemetry:
    def __init__(self, *, namespace: str, function_name: str, metrics: bool, level: str,
                 stream: TextIO | None = None) -> None:
        self.namespace = namespace
        self.function_name = function_name
        self.metrics = metrics
        self.level = LEVELS[level]
        self.stream = stream or sys.stdout
        self._directives: dict[tuple[str, ...], str] = {}

    def request(self, durations: Mapping[str, float], *, request_id: str, cold: bool,
                fields: Mapping[str, Any]) -> None:
        """One line per business request: log record + EMF metrics."""
        if self.level > LEVELS["info"] and not self.metrics:
            return
        record: dict[str, Any] = {"level": "INFO", "message": "request", "requestId": request_id,
                                  "functionName": self.function_name, "coldStart": cold,
                                  **fields}
        names = COLD_METRICS if cold else STAGE_METRICS
        values = {names[k]: round(v, 4) for k, v in durations.items() if k in names}
        record.update(values)
        if not self.metrics:
            self._write(record)
            return
        record["ColdStart"] = int(cold)
        record["FunctionName"] = self.function_name
        # The EMF directive only changes with the set of metrics: render it once per set.
        key = tuple(values)
        directive = self._directives.get(key)
        if directive is None:
            definitions = [{"Name": name, "Unit": "Milliseconds"} for name in key]
            definitions.append({"Name": "ColdStart", "Unit": "Count"})
            directive = self._directives[key] = json.dumps(
                [{"Namespace": self.namespace, "Dimensions": [["FunctionName"]],
                  "Metrics": definitions}], separators=(",", ":"))
        body = _ENCODER.encode(record)
        self.stream.write(f'{{"_aws":{{"Timestamp":{int(time.time() * 1000)},'
                          f'"CloudWatchMetrics":{directive}}},{body[1:]}\n')
        self.stream.flush()

    def log(self, level: str, message: str, **fields: Any) -> None:
        if LEVELS[level] >= self.level:
            self._write({"level": level.upper(), "message": message,
                         "functionName": self.function_name, **fields})

    def _write(self, record: dict[str, Any]) -> None:
        self.stream.write(_ENCODER.encode(record) + "\n")
        self.stream.flush()
