"""End-to-end latency per region: the caller's network (``--network-ms``: a figure, or the JSON
``onnx-lambda regions --json`` wrote) plus what the function's front sees (queue, cold start,
inference), against a latency target.

The network figure is one request's round trip on an open connection: a constant per request,
so it shifts every percentile of the front's latency by itself. A new connection costs its
handshakes on top (``regions`` reports that figure beside it; ``probe`` measures it as its
``new connection`` variant).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from onnx_lambda.plan.tables import fmt, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--network-ms", default=None, metavar="MS|regions.json",
                        help="the caller's network round trip, added to the latencies: a "
                             "number, or 'onnx-lambda regions --json' output (one row per "
                             "reachable region)")
    parser.add_argument("--latency-target-ms", type=float, default=100.0, metavar="MS",
                        help="the end-to-end target the per-region table is checked against "
                             "(100)")


def network(value: str | None, command: str) -> dict[str, float] | None:
    """``--network-ms`` read: {region or "given": ms}, or None when not given."""
    if value is None:
        return None
    from onnx_lambda.regions.report import RegionsFileError, network_option

    try:
        return network_option(value)
    except RegionsFileError as error:
        raise SystemExit(f"onnx-lambda {command}: {error}") from None


def rows(net: Mapping[str, float], front: Mapping[str, float],
         target_ms: float) -> list[dict[str, Any]]:
    """One row per region: its network, and for each of the front's figures (e.g. "warm p99",
    "cold start") the end-to-end sum and what it leaves of the target (negative: over)."""
    out = []
    for region, ms in net.items():
        row: dict[str, Any] = {"region": region, "network_ms": ms}
        for name, value in front.items():
            total = ms + value
            row[name] = {"front_ms": value, "end_to_end_ms": total,
                         "left_ms": target_ms - total, "meets": total <= target_ms}
        out.append(row)
    return out


def markdown(table_rows: list[dict[str, Any]], front: Mapping[str, float], target_ms: float,
             what: str) -> list[str]:
    """The section a report prints: the table, then one sentence for the nearest region."""
    if not table_rows:
        return []
    header = ["region", "network ms", *(f"{n}: end to end ms" for n in front), "target"]
    body = []
    for row in table_rows:
        verdicts = [f"{fmt(row[n]['end_to_end_ms'])} ({'meets' if row[n]['meets'] else 'over'})"
                    for n in front]
        body.append([row["region"], fmt(row["network_ms"]), *verdicts, f"{target_ms:g} ms"])
    first = table_rows[0]
    name = next(iter(front))
    cell = first[name]
    sentence = (f"{first['region']}: network {first['network_ms']:.0f} ms + {name} "
                f"{cell['front_ms']:.1f} ms = {cell['end_to_end_ms']:.0f} ms, "
                + (f"leaves {cell['left_ms']:.0f} ms of the {target_ms:g} ms target."
                   if cell["meets"] else
                   f"{-cell['left_ms']:.0f} ms over the {target_ms:g} ms target."))
    return [f"End to end per region (network + {what}), target {target_ms:g} ms:", "",
            *table(header, body), sentence, ""]
