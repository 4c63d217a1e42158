"""Every CloudWatch metric name this project emits, in one place: the handler's telemetry and
the warmer write them, the template's dashboard and alarms name them, and a template test
checks that each metric the dashboard plots is one of these (standard library only)."""

from __future__ import annotations

# Server-Timing stage name → EMF metric name (Milliseconds), one value per business request.
STAGE_METRICS = {
    "queue": "QueueTime",
    "decode": "Decode",
    "inference": "Inference",
    "encode": "Encode",
    "total": "Latency",
}
# Init stages → EMF metric name (Milliseconds), on an environment's first business request.
INIT_METRICS = {"init": "InitDuration", "model-load": "ModelLoad"}
COLD_START = "ColdStart"  # Count: 1 on an environment's first business request, else 0

# The warmer's report → EMF metric name (Count), one value per scheduled run.
WARMER_METRICS = {
    "asked": "EnvironmentsAsked",
    "environments": "EnvironmentsReached",
    "cold": "ColdEnvironmentsFound",
    "throttled": "Throttled",
    "failed": "PingsFailed",
}

HANDLER = frozenset({*STAGE_METRICS.values(), *INIT_METRICS.values(), COLD_START})
WARMER = frozenset(WARMER_METRICS.values())
