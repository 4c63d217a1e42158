"""PNG plots of the lab's results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from onnx_lambda.plan.plots import pyplot, save
from onnx_lambda.stats import cdf

STAGE_COLORS = {"interpreter": "#9e9e9e", "imports": "#4e79a7", "model-load": "#f28e2b",
                "warm-up": "#59a14f", "other init": "#bab0ac", "first request": "#e15759"}


def latency_cdf(samples: Mapping[str, Sequence[float]], title: str, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, values in samples.items():
        if values:
            xs, ys = cdf(values)
            ax.plot(xs, ys, label=name, linewidth=1.5)
    ax.set_xscale("log")
    ax.set_xlabel("latency, ms (log scale)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return save(fig, plt, path)


def cold_breakdown(breakdowns: Mapping[str, Mapping[str, float]], title: str,
                   path: Path) -> Path:
    """Stacked horizontal bars: one per target, one segment per stage (median ms)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(breakdowns) + 2.0))
    names = list(breakdowns)
    stages = [s for s in STAGE_COLORS if any(s in parts for parts in breakdowns.values())]
    left = [0.0] * len(names)
    for stage in stages:
        widths = [breakdowns[n].get(stage, 0.0) for n in names]
        ax.barh(names, widths, left=left, label=stage, color=STAGE_COLORS.get(stage))
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("ms from process spawn to first response (median)")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=len(stages), fontsize=8,
              frameon=False)
    return save(fig, plt, path)
