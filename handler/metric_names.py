"""Every CloudWatch metric name the handler emits, in one place (``warmer/metric_names.py``
holds the warmer's): the handler's telemetry writes them, the template's dashboard and alarms
name them, and a template test checks that each metric the dashboard plots is one of the two
modules' names (standard library only)."""

from __future__ import annotations

# Server-Timing stage name → EMF metric name (Milliseconds), one value per business request.
STAGE_METRICS = {
    "queue": "QueueTime",
    "decode": "Decode",
    "inference": "Inference",
    "encode": "Encode",
    "total": "Latency",
    "ttft": "TimeToFirstToken",  # generation (handler.api.openai.chat): request start → first token
    "generate": "Generation",  # generation: the prompt's prefill and every decode step
}
# Server-Timing entry → EMF metric name (Count/Second): generation's pace after the first token
RATE_METRICS = {"tokens-per-s": "TokensPerSecond"}
# Server-Timing entries that count, not time, with no metric of their own: the prompt tokens
# the prefix cache held (handler.generation.prefix)
COUNT_ENTRIES = frozenset({"prefix-hit"})
# Init stages → EMF metric name (Milliseconds), on an environment's first business request.
INIT_METRICS = {"init": "InitDuration", "model-load": "ModelLoad"}
COLD_START = "ColdStart"  # Count: 1 on an environment's first business request, else 0

HANDLER = frozenset({*STAGE_METRICS.values(), *RATE_METRICS.values(), *INIT_METRICS.values(),
                     COLD_START})
