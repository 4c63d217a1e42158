"""The ranked table, the budget sentence, and the JSON document the planners read back
(``tune --network-ms regions.json``, ``simulate --network-ms regions.json``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onnx_lambda import json_documents

FORMAT = "onnx-lambda-regions/1"
WHAT = {"lambda-endpoint": "HTTPS to each region's public Lambda endpoint (GET /, no "
                           "credentials)",
        "deployed": "each deployed endpoint, measured by probe (network leg: total minus the "
                    "function's Server-Timing)"}


def rank(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reachable regions fastest first (by the median network figure), then the unreachable
    ones in the order given."""
    up = sorted((r for r in results if r["reachable"]), key=lambda r: r["network_ms"])
    return up + [r for r in results if not r["reachable"]]


def document(results: Sequence[dict[str, Any]], *, mode: str, budget_ms: float,
             samples: int) -> dict[str, Any]:
    ranked = rank(results)
    for r in ranked:
        r["budget_left_ms"] = (budget_ms - r["network_ms"]) if r["reachable"] else None
    return {"format": FORMAT, "mode": mode, "what": WHAT[mode], "samples": samples,
            "budget_ms": budget_ms, "regions": ranked}


def sentence(r: Mapping[str, Any], budget_ms: float) -> str:
    """'eu-west-1: 19 ms, leaves 81 ms of a 100 ms budget (a new connection: …)'."""
    if not r["reachable"]:
        return f"{r['region']}: unreachable ({'; '.join(r['errors']) or 'no answer'})"
    left = budget_ms - r["network_ms"]
    text = (f"{r['region']}: {r['network_ms']:.0f} ms, "
            + (f"leaves {left:.0f} ms of a {budget_ms:g} ms budget" if left >= 0
               else f"{-left:.0f} ms over a {budget_ms:g} ms budget"))
    fresh = r.get("new_connection_ms")
    if fresh is not None:
        text += f" ({fresh:.0f} ms on a new connection, handshakes included)"
    return text


def _spread(phase: Mapping[str, Any] | None) -> str:
    if not phase:
        return "-"
    if "min" in phase:
        return f"{phase['median']:.1f} ({phase['min']:.1f}–{phase['max']:.1f})"
    return f"{phase['median']:.1f} (p95 {phase['p95']:.1f})"


def text(doc: Mapping[str, Any]) -> str:
    budget = doc["budget_ms"]
    lines = [f"regions: {doc['what']}, {doc['samples']} samples each; ms: median (spread)",
             "", f"{'#':>2}  {'region':<16}{'network':>22}{'connect':>22}{'TLS':>22}"
                 f"{'new conn.':>11}{'budget left':>13}"]
    for i, r in enumerate(doc["regions"], 1):
        if not r["reachable"]:
            continue
        phases = r["phases"]
        fresh = r.get("new_connection_ms")
        network = phases.get("request") or phases.get("network")  # (deployed: probe's)
        lines.append(f"{i:>2}  {r['region']:<16}{_spread(network):>22}"
                     f"{_spread(phases.get('connect')):>22}{_spread(phases.get('tls')):>22}"
                     f"{'-' if fresh is None else f'{fresh:.1f}':>11}"
                     f"{r['budget_left_ms']:>13.1f}")
    down = [r for r in doc["regions"] if not r["reachable"]]
    if down:
        lines += ["", "unreachable (not ranked): " + "; ".join(
            f"{r['region']} ({'; '.join(r['errors']) or 'no answer'})" for r in down)]
    up = [r for r in doc["regions"] if r["reachable"]]
    lines.append("")
    lines += [sentence(r, budget) for r in up[:3]]
    if not up:
        lines.append("no region answered: check this machine's network (proxy, firewall)")
    return "\n".join(lines) + "\n"


class RegionsFileError(ValueError):
    """A file given to ``--network-ms`` that ``regions --json`` did not write."""


def network_option(value: str) -> dict[str, float]:
    """``--network-ms``: a number (one caller, one figure) or ``regions --json``'s file: the
    reachable regions' network figures, fastest first."""
    try:
        ms = float(value)
    except ValueError:
        return load_network(Path(value))
    if not math.isfinite(ms) or ms < 0:
        raise RegionsFileError(f"--network-ms {value}: a number of ms ≥ 0 or a regions JSON")
    return {"given": ms}


def load_network(path: Path) -> dict[str, float]:
    doc = json_documents.read(path, FORMAT, RegionsFileError,
                              "written by 'onnx-lambda regions --json'")
    found = {r["region"]: float(r["network_ms"]) for r in doc.get("regions", [])
             if r.get("reachable") and r.get("network_ms") is not None}
    if not found:
        raise RegionsFileError(f"{path}: no reachable region in it")
    return found
