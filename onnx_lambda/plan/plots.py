"""PNG plots of the planner's results (matplotlib, Agg backend: no display needed); ``pyplot``
and ``save`` serve every other plot too (the lab's, ``onnx-lambda probe --plot``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def tune(points: Sequence[Any], title: str, path: Path) -> Path:
    """Warm p50/p99 and cold init vs memory (log-log), cost per million on a second axis;
    extrapolated sizes drawn hollow."""
    plt = pyplot()
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
    return save(fig, plt, path)


def strategies(results: Sequence[Mapping[str, Any]], title: str, path: Path,
               recommended: str | None = None, target: float | None = None) -> Path:
    """Cold-start fraction vs monthly cost, one point per strategy."""
    plt = pyplot()
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
    return save(fig, plt, path)


def save(fig: Any, plt: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
