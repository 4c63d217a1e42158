"""The warm-up ping (see docs/explanation/architecture.md): recognised before any routing, never
counted as business traffic."""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_HOLD_MS = 1000


def is_ping(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    if event.get("warmer") is True:
        return True
    return event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event"


def hold_ms(event: dict[str, Any]) -> float:
    try:
        held = float(event.get("holdMs", 0))
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return min(max(held, 0.0), MAX_HOLD_MS) if math.isfinite(held) else 0.0

