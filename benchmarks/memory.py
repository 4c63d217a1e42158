"""Peak memory per environment, from the cold runs: the probe's peak RSS (one process: init,
first request and 20 warm requests) and the emulator's ``Max Memory Used`` (peak RSS of the
environment's process tree, including the runtime client, after cold + warm invocations)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onnx_lambda.stats import median


def summarize(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, float]]:
    """``runs``: ``"target|view"`` → results of ``cold.scenarios``; → target → medians (MB)."""
    out: dict[str, dict[str, float]] = {}
    for key, results in runs.items():
        target, view = key.split("|")
        entry = out.setdefault(target, {})
        if view == "probe":
            entry["peak_rss_mb"] = median([r["rss_mb"] for r in results])
        else:
            used = [r["max_memory_mb"] for r in results if r.get("max_memory_mb") is not None]
            if used:
                entry["max_memory_used_mb"] = median(used)
    return out
