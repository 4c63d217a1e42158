"""PNG plots of the benchmark results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onnx_lambda.bench.stats import cdf

STAGE_COLORS = {"interpreter": "#9e9e9e", "imports": "#4e79a7", "model-load": "#f28e2b",
                "warm-up": "#59a14f", "other init": "#bab0ac", "first request": "#e15759"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def latency_cdf(samples: Mapping[str, Sequence[float]], title: str, path: Path) -> Path:
    plt = _pyplot()
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
    return _save(fig, plt, path)


def cold_breakdown(breakdowns: Mapping[str, Mapping[str, float]], title: str,
                   path: Path) -> Path:
    """Stacked horizontal bars: one per target, one segment per stage (median ms)."""
    plt = _pyplot()
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
    return _save(fig, plt, path)


def tune(points: Sequence[Any], title: str, path: Path) -> Path:
    """Warm p50/p99 and cold init vs memory (log-log), cost per million on a second axis;
    extrapolated sizes drawn hollow."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    mem = [p.memory_mb for p in points]
    for attr, label, marker in (("warm_p50_ms", "warm p50", "o"), ("warm_p99_ms", "warm p99", "s"),
                                ("cold_init_ms", "cold init + first request", "^")):
        ax.plot(mem, [getattr(p, attr) for p in points], label=label, linewidth=1)
        for p in points:
            ax.scatter([p.memory_mb], [getattr(p, attr)], marker=marker,
                       facecolors="C0" if p.measured else "none", edgecolors="k", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memory, MB (hollow = extrapolated, not measured)")
    ax.set_ylabel("ms")
    ax.grid(True, which="both", alpha=0.3)
    cost_ax = ax.twinx()
    cost_ax.plot(mem, [p.cost_per_million for p in points], "k--", label="USD per 1M requests")
    cost_ax.set_ylabel("USD per million requests")
    lines = ax.get_legend_handles_labels()
    extra = cost_ax.get_legend_handles_labels()
    ax.legend(lines[0] + extra[0], lines[1] + extra[1], loc="upper center", fontsize=8)
    ax.set_title(title)
    return _save(fig, plt, path)


def strategies(results: Sequence[Mapping[str, Any]], title: str, path: Path,
               recommended: str | None = None, target: float | None = None) -> Path:
    """Cold-start fraction vs monthly cost, one point per strategy."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in results:
        cost = r["monthly_cost"]["total"]
        pct = 100.0 * r["cold_fraction"]
        star = r["strategy"] == recommended
        ax.scatter([cost], [pct], marker="*" if star else "o", s=160 if star else 30,
                   color="C3" if star else "C0", zorder=3)
        ax.annotate(r["strategy"], (cost, pct), fontsize=6, xytext=(3, 3),
                    textcoords="offset points")
    if target is not None:
        ax.axhline(100.0 * target, color="C3", linestyle=":", label="target")
    ax.set_xscale("log")
    ax.set_xlabel("monthly cost, USD")
    ax.set_ylabel("requests with a cold start, %")
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    return _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
