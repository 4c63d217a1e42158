"""The CloudWatch metric names the warmer emits (``handler/metric_names.py`` holds the
handler's): the template's dashboard and alarms name them, and a template test checks that each
metric the dashboard plots is one of the two modules' names (standard library only)."""

from __future__ import annotations

# The warmer's report → EMF metric name (Count), one value per scheduled run.
WARMER_METRICS = {
    "asked": "EnvironmentsAsked",
    "environments": "EnvironmentsReached",
    "cold": "ColdEnvironmentsFound",
    "throttled": "Throttled",
    "failed": "PingsFailed",
}

WARMER = frozenset(WARMER_METRICS.values())
