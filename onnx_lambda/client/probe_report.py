"""The probe's report as text (a table per variant, the comparisons) and as a PNG of the stage
breakdown: one stacked bar per percentile, each stage's own percentile (so a bar is a profile
of that percentile, not one request)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onnx_lambda.client.probe import BASELINE, PERCENTILES
from onnx_lambda.stats import DEFINITION

# the bar's segments: the server's stages, then what the caller saw beyond them
SEGMENTS = {"server queue": "#9e9e9e", "server decode": "#4e79a7",
            "server inference": "#f28e2b", "server encode": "#59a14f",
            "server other": "#bab0ac", "network": "#e15759"}


def text(report: dict[str, Any]) -> str:
    shapes = ", ".join(f"{k} {v['dtype']}{v['shape']}" for k, v in report["inputs"].items())
    lines = [f"probe {report['url']}  model {report['model']}  {report['requests']} requests "
             f"per variant, concurrency {report['concurrency']}  inputs: {shapes}",
             f"({DEFINITION})", ""]
    for name, v in report["variants"].items():
        lines.append(f"{name}: {', '.join(v['protocol'])}; ok {v['ok']}, errors {v['errors']}, "
                     f"retried {v['retried']}, new connections {v['new_connections']}, cold "
                     f"starts {len(v['cold_starts'])}; bytes sent {v['sent_bytes']:.0f}, "
                     f"received {v['received_bytes']:.0f} (median, headers included)")
        lines.append("  " + f"{'ms (warm)':<18}" + "".join(f"{f'p{q:g}':>9}"
                                                          for q in PERCENTILES))
        for stage, values in v["stages"].items():
            lines.append("  " + f"{stage:<18}" + "".join(f"{values[f'p{q:g}']:>9.3f}"
                                                       for q in PERCENTILES))
        for cold in v["cold_starts"]:
            lines.append("  cold start: " + ", ".join(f"{k} {x:.1f}" for k, x in cold.items()))
        for error in v["first_errors"]:
            lines.append(f"  error: {error}")
        lines.append("")
    for key, value in report["comparisons"].items():
        shown = f"{value:.2f}x" if isinstance(value, float) else value
        lines.append(f"{key}: {shown}")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> Path:
    from onnx_lambda.plan.plots import pyplot, save

    plt = pyplot()
    variants = report["variants"]
    fig, axes = plt.subplots(1, len(variants), figsize=(3.2 * len(variants), 4), sharey=True,
                             squeeze=False)
    for ax, (name, v) in zip(axes[0], variants.items(), strict=True):
        labels = [f"p{q:g}" for q in PERCENTILES]
        bottom = [0.0] * len(labels)
        for segment, color in SEGMENTS.items():
            heights = [_segment(v["stages"], segment, label) for label in labels]
            ax.bar(labels, heights, bottom=bottom, color=color, label=segment)
            bottom = [a + b for a, b in zip(bottom, heights, strict=True)]
        ax.set_title(f"{name} ({', '.join(v['protocol'])})", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("ms, warm requests")
    axes[0][0].legend(loc="upper left", fontsize=7)
    fig.suptitle(f"probe {report['url']} ({report['model']}): where the caller's time goes "
                 f"(baseline {BASELINE})", fontsize=10)
    return save(fig, plt, path)


def _segment(stages: dict[str, dict[str, float]], segment: str, label: str) -> float:
    def get(stage: str) -> float:
        return stages.get(stage, {}).get(label, 0.0)

    if segment == "server other":
        named = sum(get(f"server {s}") for s in ("decode", "inference", "encode"))
        return max(0.0, get("server total") - named)
    return get(segment)
