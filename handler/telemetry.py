"""Where every millisecond goes: stage timer, ``Server-Timing`` header, and one JSON line per
request that is both the structured log record and a CloudWatch EMF metrics document.

EMF is written by hand (the spec is one JSON object with an ``_aws`` member) rather than with
Powertools Metrics: the same output without Powertools' import cost on the cold path (measured
in the README's cold-start table). The line is a %-template rendered once per set of stages
(with the ``Server-Timing`` template beside it: ``Telemetry.request`` returns the header), so a
warm request only formats numbers and a few escaped strings (measured: see
``python -m onnx_lambda.bench.handler_overhead`` and ``warm_instructions``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping

from handler.metric_names import COLD_START, INIT_METRICS, STAGE_METRICS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

COLD_METRICS = {**STAGE_METRICS, **INIT_METRICS}
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_INFO = LEVELS["info"]
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
_escape = json.encoder.encode_basestring_ascii  # str → JSON string literal, in C


_now = time.perf_counter


class StageTimer:
    """Consecutive stages measured with ``perf_counter``: ``mark("decode")`` closes a stage."""

    __slots__ = ("_last", "durations", "start")

    def __init__(self) -> None:
        self.start = self._last = _now()
        self.durations: dict[str, float] = {}

    def mark(self, stage: str) -> None:
        now = _now()
        durations = self.durations
        durations[stage] = durations.get(stage, 0.0) + (now - self._last) * 1000.0
        self._last = now

    def total_ms(self) -> float:
        return (_now() - self.start) * 1000.0


def server_timing(durations: Mapping[str, float], cold: bool) -> str:
    """The ``Server-Timing`` header alone (``Telemetry.request`` returns the same text)."""
    key = (cold, *durations)
    templates = _TIMING_TEMPLATES.get(key)
    if templates is None:  # one per set of stages: the hot path only fills in numbers
        templates = _TIMING_TEMPLATES[key] = (_timing_template(durations, cold),
                                              _numbers_template(durations))
    return templates[0] % tuple(_milliseconds(durations, templates[1]))


def _timing_template(durations: Mapping[str, float], cold: bool) -> str:
    """The header with a ``%s`` per stage, for the stage's ``_milliseconds`` text."""
    parts = [f"{name};dur=%s" for name in durations]
    if cold:
        parts.append('cold-start;desc="first request of this environment"')
    return ", ".join(parts)


def _numbers_template(durations: Mapping[str, float]) -> bytes:
    return b",".join([b"%.3f"] * len(durations))


def _milliseconds(durations: Mapping[str, float], template: bytes) -> list[str]:
    """Each duration as milliseconds with 3 decimals (µs resolution: below it is the clock's
    noise), formatted once for both the header and the EMF line (a float's ``%`` is most of
    either's cost; bytes' ``%`` is the cheaper, the split one more C call)."""
    if not durations:
        return []
    return (template % tuple(durations.values())).decode().split(",")


_TIMING_TEMPLATES: dict[tuple[object, ...], tuple[str, bytes]] = {}


class _Layout:
    """One request line's layout for one set of stages (warm or cold), rendered once: the
    constant text around the timestamp and the request id is joined as it is, and only the
    short rest (the numbers' texts and the fields) goes through a %-template, whose cost grows
    with every character it scans."""

    __slots__ = ("middle", "numbers", "prefix", "stages", "template", "timing")
    stages: tuple[int, ...] | None

    def __init__(self, telemetry: Telemetry, durations: Mapping[str, float],
                 cold: bool) -> None:
        self.timing = _timing_template(durations, cold)  # the Server-Timing header's
        self.numbers = _numbers_template(durations)
        names = COLD_METRICS if cold else STAGE_METRICS
        stages = tuple(i for i, k in enumerate(durations) if k in names)
        metrics = [names[k] for k in durations if k in names]
        # None: every stage is a metric, in order (the usual request: no look-up per value)
        self.stages = None if len(stages) == len(durations) else stages
        function = _ENCODER.encode(telemetry.function_name)  # (joined, not a template)
        record = f'"level":"INFO","message":"request","functionName":{function}'
        if telemetry.metrics:
            definitions = [{"Name": name, "Unit": "Milliseconds"} for name in metrics]
            definitions.append({"Name": COLD_START, "Unit": "Count"})
            directive = _ENCODER.encode([{"Namespace": telemetry.namespace,
                                          "Dimensions": [["FunctionName"]],
                                          "Metrics": definitions}])
            self.prefix = f'{{"_aws":{{"CloudWatchMetrics":{directive},"Timestamp":'
            middle = f'}},{record},"FunctionName":{function},"{COLD_START}":{int(cold)}'
        else:
            self.prefix = '{"timestamp":'
            middle = f',{record}'
        self.middle = f'{middle},"coldStart":{"true" if cold else "false"},"requestId":'
        values = "".join(f',"{name}":%s' for name in metrics)  # (our names: no "%" in them)
        self.template = (f'%s{values},"source":%s,"method":%s,"path":%s,"status":%d,'
                         f'"errorType":%s,"nonFinite":%d}}\n')


class Telemetry:
    def __init__(self, *, namespace: str, function_name: str, metrics: bool, level: str,
                 stream: TextIO | None = None) -> None:
        self.namespace = namespace
        self.function_name = function_name
        self.metrics = metrics
        self.level = LEVELS[level]
        self.stream = stream or sys.stdout
        self._layouts: dict[tuple[object, ...], _Layout] = {}

    def request(self, durations: Mapping[str, float], request_id: str, cold: bool,
                source: str, method: str | None, path: str | None, status: int,
                error_type: str | None = None, non_finite: int = 0) -> str:
        """One line per business request: log record + EMF metrics. ``non_finite`` counts the
        NaN / ±Infinity values the response carries as ``null``. → the ``Server-Timing``
        header of the same durations (one template lookup for both)."""
        if self.level > _INFO and not self.metrics:
            return server_timing(durations, cold)
        key = (cold, *durations)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = _Layout(self, durations, cold)
        texts = _milliseconds(durations, layout.numbers)
        stream = self.stream
        stages = texts if layout.stages is None else map(texts.__getitem__, layout.stages)
        stream.write(layout.prefix + str(int(time.time() * 1000)) + layout.middle
                     + layout.template % (
            _escape(request_id), *stages, _escape(source),
            "null" if method is None else _escape(method),
            "null" if path is None else _escape(path), status,
            "null" if error_type is None else _escape(error_type), non_finite))
        stream.flush()
        return layout.timing % tuple(texts)

    def log(self, level: str, message: str, **fields: Any) -> None:
        if LEVELS[level] >= self.level:
            self._write({"level": level.upper(), "message": message,
                         "functionName": self.function_name, **fields})

    def _write(self, record: dict[str, Any]) -> None:
        self.stream.write(_ENCODER.encode(record) + "\n")
        self.stream.flush()
