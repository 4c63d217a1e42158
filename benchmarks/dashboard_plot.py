"""A picture of the template's CloudWatch dashboard: the widget grid of each cold-start
strategy, drawn from the ``ObservabilityDashboard`` body of ``template.yaml`` (resolved as
CloudFormation would, conditions included), so the picture in docs/how-to/observability.md
cannot drift.

    python -m benchmarks.dashboard_plot [-o docs/dashboard.png] [--template template.yaml]
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onnx_lambda.emulator.intrinsics import Resolver, load_yaml
from onnx_lambda.plan.plots import pyplot, save
from onnx_lambda.source_tree import root

GRID = 24  # CloudWatch's dashboard columns
COLORS = {"text": "#d9d9d9", "metric": "#a6c8e8", "log": "#f4c28f"}
SPECIFIC = "#8fd19e"  # widgets only some strategies get
Placed = tuple[int, int, int, int, dict[str, Any]]


def body(template: Path, overrides: Mapping[str, str]) -> dict[str, Any]:
    """The dashboard JSON one deployment would get."""
    data = load_yaml(template)
    node = data["Resources"]["ObservabilityDashboard"]["Properties"]["DashboardBody"]
    return json.loads(Resolver(data, overrides).resolve(node))


def strategies(template: Path) -> list[str]:
    return list(load_yaml(template)["Parameters"]["ColdStartStrategy"]["AllowedValues"])


def layout(widgets: Sequence[dict[str, Any]]) -> list[Placed]:
    """CloudWatch's placement of widgets without x/y: left to right, a new row when the next
    one does not fit the 24 columns (a widget's own x/y wins)."""
    placed: list[Placed] = []
    x = y = row_height = 0
    for widget in widgets:
        width, height = widget.get("width", 6), widget.get("height", 6)
        if "x" in widget and "y" in widget:
            placed.append((widget["x"], widget["y"], width, height, widget))
            continue
        if x + width > GRID:
            x, y, row_height = 0, y + row_height, 0
        placed.append((x, y, width, height, widget))
        x += width
        row_height = max(row_height, height)
    return placed


def _title(widget: Mapping[str, Any]) -> str:
    props = widget.get("properties", {})
    if widget.get("type") == "text":
        return props.get("markdown", "").split("\\n")[0].split("\n")[0].lstrip("# ")
    return props.get("title", widget.get("type", "?"))


def draw(template: Path, path: Path) -> Path:
    plt = pyplot()
    names = strategies(template)
    bodies = {name: body(template, {"ColdStartStrategy": name}) for name in names}
    common = set.intersection(*({_title(w) for w in b["widgets"]} for b in bodies.values()))
    placements = {name: layout(b["widgets"]) for name, b in bodies.items()}
    depth = max(y + h for placed in placements.values() for _, y, _, h, _ in placed)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.2 * depth / GRID + 0.6),
                             squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for x, y, width, height, widget in placements[name]:
            title = _title(widget)
            color = COLORS.get(widget.get("type", ""), "#eeeeee")
            if title not in common and widget.get("type") != "text":
                color = SPECIFIC
            ax.add_patch(plt.Rectangle((x + 0.15, y + 0.15), width - 0.3, height - 0.3,
                                       facecolor=color, edgecolor="#555555", linewidth=0.6))
            label = textwrap.fill(title, width=max(8, int(width * 1.6)))
            ax.text(x + width / 2, y + height / 2, label, ha="center", va="center",
                    fontsize=5.2)
        ax.set_xlim(0, GRID)
        ax.set_ylim(depth, 0)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"ColdStartStrategy={name}", fontsize=8)
    fig.suptitle("template.yaml ObservabilityDashboard (green: this strategy's own widgets; "
                 "blue: metrics; orange: Logs Insights)", fontsize=8)
    fig.tight_layout()
    return save(fig, plt, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=root() / "docs" / "dashboard.png")
    parser.add_argument("--template", type=Path, default=root() / "template.yaml")
    args = parser.parse_args(argv)
    print(draw(args.template, args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
