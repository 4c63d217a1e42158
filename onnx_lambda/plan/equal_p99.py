"""Two families of ways to serve the same traffic compared on cost "at equal p99": the target
is the larger of the two families' best p99 (a latency both reach), and each family's cheapest
option at or under it is compared. ``tune`` compares CPU settings with a GPU, ``simulate``
Managed Instances with provisioned concurrency."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple


class Option(NamedTuple):
    """One measured way to serve: its p99 and its cost (in the unit the caller compares)."""

    label: str
    p99_ms: float
    cost: float


def cheapest(first: Sequence[Option], second: Sequence[Option]) -> dict[str, Any] | None:
    """``p99_target_ms``, the cheapest ``first`` and ``second`` option at or under it, and
    ``ratio`` (second's cost / first's); None when either family is empty."""
    if not first or not second:
        return None
    target = max(min(o.p99_ms for o in first), min(o.p99_ms for o in second))
    a = min((o for o in first if o.p99_ms <= target), key=lambda o: o.cost)
    b = min((o for o in second if o.p99_ms <= target), key=lambda o: o.cost)
    return {"p99_target_ms": target, "first": a._asdict(), "second": b._asdict(),
            "ratio": b.cost / a.cost if a.cost else float("inf")}
