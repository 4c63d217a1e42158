"""The warm-up ping (see docs/architecture.md): recognised before any routing, never counted
as business traffic."""

from __future__ import annotations

import math
import os
import time
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


class EnvironmentState:
    """Per execution environment: identity, age, and whether it has served anything yet."""

    def __init__(self, initialization_type: str) -> None:
        self.initialization_type = initialization_type
        self.environment_id = os.urandom(8).hex()
        self.started = time.monotonic()
        self.invoked = False  # any invocation, ping or business
        self.requests_served = 0  # business requests only

    def first_invocation(self) -> bool:
        """True when this invocation waited for the init: the environment's first, unless it
        was initialised ahead of traffic (provisioned concurrency)."""
        first, self.invoked = not self.invoked, True
        return first and self.initialization_type != "provisioned-concurrency"

    def refresh(self) -> None:
        """After a SnapStart restore: a new environment that shares the snapshot's memory."""
        self.__init__("snap-start")  # type: ignore[misc]

    def answer(self, *, cold: bool, inference_ms: float, held_ms: float) -> dict[str, Any]:
        return {"warm": True, "environmentId": self.environment_id, "coldStart": cold,
                "initializationType": self.initialization_type,
                "uptimeMs": round((time.monotonic() - self.started) * 1000.0, 3),
                "requestsServed": self.requests_served, "inferenceMs": round(inference_ms, 3),
                "heldMs": round(held_ms, 3)}
