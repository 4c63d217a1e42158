"""Where every millisecond goes: stage timer, ``Server-Timing`` header, and one JSON line per
request that is both the structured log record and a CloudWatch EMF metrics document.

The EMF document is ours (the spec is one JSON object with an ``_aws`` member) rather than
Powertools Metrics: the same output without Powertools' import cost on the cold path (measured
in the README's cold-start table). The line is a %-template rendered once per set of stages
(with the ``Server-Timing`` template beside it: ``Telemetry.request`` returns the header), and
the fields after the metrics once per (source, method, path, status, ...), so a warm request
formats its numbers, escapes its request id and joins. What that buys: ``request`` costs 29 K
instructions with the template, 92 K with the line built as a dict and written by yyjson (whose
``dumps`` alone is 24 K; the ``json`` module's, 104 K): 63 K is ~45 % of the tiny model's whole
warm overhead (138 K; callgrind, Python 3.11).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping

from handler.metric_names import (
    COLD_START,
    COUNT_ENTRIES,
    INIT_METRICS,
    RATE_METRICS,
    STAGE_METRICS,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    # a request line's fields after its metrics: source, method, path, status, error type,
    # non-finite count
    Ending = tuple[str, str | None, str | None, int, str | None, int]

WARM_METRICS = {**STAGE_METRICS, **RATE_METRICS}
COLD_METRICS = {**WARM_METRICS, **INIT_METRICS}
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_INFO = LEVELS["info"]
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
_escape = json.encoder.encode_basestring_ascii  # str → JSON string literal, in C


now = time.perf_counter


class StageTimer:
    """A request's consecutive stages: ``mark("decode")`` ends the stage since the last mark
    (or the start); ``durations`` holds each stage's milliseconds, in the order they ran."""

    __slots__ = ("_last", "durations", "start")

    def __init__(self) -> None:
        self.start = self._last = now()
        self.durations: dict[str, float] = {}

    def mark(self, stage: str) -> None:
        end = now()
        self.durations[stage] = (end - self._last) * 1000.0
        self._last = end

    def close(self, stage: str) -> dict[str, float]:
        """The last stage, then ``total`` from the start. → ``durations``"""
        self.mark(stage)
        self.durations["total"] = (self._last - self.start) * 1000.0
        return self.durations


def server_timing(durations: Mapping[str, float], cold: bool) -> str:
    """The ``Server-Timing`` header alone (``Telemetry.request`` returns the same text): each
    duration as milliseconds with 3 decimals (µs resolution: below it is the clock's noise)."""
    key = (cold, *durations)
    template = _TIMING_TEMPLATES.get(key)
    if template is None:  # one per set of stages
        template = _TIMING_TEMPLATES[key] = _timing_template(durations, cold)
    return template % tuple([f"{value:.3f}" for value in durations.values()])


def _timing_template(durations: Mapping[str, float], cold: bool) -> str:
    """The header with a ``%s`` per stage, for the stage's text (a rate, not a duration, as
    the entry's description)."""
    parts = [f"{name};desc=%s" if name in RATE_METRICS or name in COUNT_ENTRIES
             else f"{name};dur=%s"
             for name in durations]
    if cold:
        parts.append('cold-start;desc="first request of this environment"')
    return ", ".join(parts)


_TIMING_TEMPLATES: dict[tuple[object, ...], str] = {}
_RATE_NAMES = frozenset(RATE_METRICS.values())


def _unit(metric: str) -> str:
    return "Count/Second" if metric in _RATE_NAMES else "Milliseconds"


class _Layout:
    """One request line's layout for one set of stages (warm or cold), rendered once. A warm
    request then makes two C calls of text: one bytes ``%`` formats the timestamp and every
    duration (``numbers``, split at its commas), and one join puts the line together from the
    constant parts (``parts``: ``None`` where a request's own text goes) and the request's
    ``Telemetry._tail``."""

    __slots__ = ("numbers", "parts", "slots", "stages", "timing")
    stages: tuple[int, ...] | None

    def __init__(self, telemetry: Telemetry, durations: Mapping[str, float],
                 cold: bool) -> None:
        self.timing = _timing_template(durations, cold)  # the Server-Timing header's
        self.numbers = b",".join([b"%d"] + [b"%.3f"] * len(durations))  # timestamp first
        names = COLD_METRICS if cold else WARM_METRICS
        # the texts' indices (after the timestamp's) of the stages that are metrics
        stages = tuple(i + 1 for i, k in enumerate(durations) if k in names)
        metrics = [names[k] for k in durations if k in names]
        # None: every stage is a metric, in order (the usual request: no look-up per value)
        self.stages = None if len(stages) == len(durations) else stages
        function = _ENCODER.encode(telemetry.function_name)
        record = f'"level":"INFO","message":"request","functionName":{function}'
        if telemetry.metrics:
            definitions = [{"Name": name, "Unit": _unit(name)} for name in metrics]
            definitions.append({"Name": COLD_START, "Unit": "Count"})
            directive = _ENCODER.encode([{"Namespace": telemetry.namespace,
                                          "Dimensions": [["FunctionName"]],
                                          "Metrics": definitions}])
            prefix = f'{{"_aws":{{"CloudWatchMetrics":{directive},"Timestamp":'
            middle = f'}},{record},"FunctionName":{function},"{COLD_START}":{int(cold)}'
        else:
            prefix = '{"timestamp":'
            middle = f',{record}'
        middle = f'{middle},"coldStart":{"true" if cold else "false"},"requestId":'
        # [prefix, timestamp, middle, request id, ,"Name":, value, ..., tail]
        parts: list[str | None] = [prefix, None, middle, None]
        for name in metrics:
            parts += [f',"{name}":', None]
        self.parts = [*parts, None]
        # where each request's texts go: the timestamp, then each metric's value
        self.slots = slice(5, len(parts), 2)


class Telemetry:
    def __init__(self, *, namespace: str, function_name: str, metrics: bool, level: str,
                 stream: TextIO | None = None) -> None:
        self.namespace = namespace
        self.function_name = function_name
        self.metrics = metrics
        self.level = LEVELS[level]
        self.stream = stream or sys.stdout
        self._layouts: dict[tuple[object, ...], _Layout] = {}
        self._tails: dict[Ending, str] = {}

    def request(self, durations: Mapping[str, float], *, request_id: str, cold: bool,
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
        texts = (layout.numbers % (time.time() * 1000.0, *durations.values())).decode().split(",")
        ending: Ending = (source, method, path, status, error_type, non_finite)
        tail = self._tails.get(ending) or self._tail(ending)
        parts: list[Any] = layout.parts.copy()
        parts[1] = texts[0]
        parts[3] = _escape(request_id)
        parts[layout.slots] = texts[1:] if layout.stages is None else map(
            texts.__getitem__, layout.stages)
        parts[-1] = tail
        stream = self.stream
        stream.write("".join(parts))
        stream.flush()
        del texts[0]
        return layout.timing % tuple(texts)

    def _tail(self, ending: Ending) -> str:
        """The line's fields after the metrics, for one (source, method, path, status, error
        type, non-finite count): remembered while few (a client chooses the path)."""
        source, method, path, status, error_type, non_finite = ending
        tail = (f',"source":{_escape(source)},'
                f'"method":{"null" if method is None else _escape(method)},'
                f'"path":{"null" if path is None else _escape(path)},"status":{int(status)},'
                f'"errorType":{"null" if error_type is None else _escape(error_type)},'
                f'"nonFinite":{int(non_finite)}}}\n')
        if len(self._tails) < 64:
            self._tails[ending] = tail
        return tail

    def figures(self, message: str, values: Mapping[str, float], **fields: Any) -> None:
        """One line of ``values`` (Server-Timing names of ``WARM_METRICS``) outside a request's
        own line, e.g. a streamed answer's figures when its stream ends: EMF metrics as well
        when metrics are on."""
        named = {WARM_METRICS[key]: round(value, 3) for key, value in values.items()}
        record: dict[str, Any] = {"level": "INFO", "message": message,
                                  "functionName": self.function_name, **fields, **named}
        if self.metrics:
            record["_aws"] = {"Timestamp": int(time.time() * 1000.0), "CloudWatchMetrics": [{
                "Namespace": self.namespace, "Dimensions": [["FunctionName"]],
                "Metrics": [{"Name": name, "Unit": _unit(name)} for name in named]}]}
            record["FunctionName"] = self.function_name
        elif self.level > _INFO:
            return
        self._write(record)

    def log(self, level: str, message: str, **fields: Any) -> None:
        if LEVELS[level] >= self.level:
            self._write({"level": level.upper(), "message": message,
                         "functionName": self.function_name, **fields})

    def _write(self, record: dict[str, Any]) -> None:
        self.stream.write(_ENCODER.encode(record) + "\n")
        self.stream.flush()
