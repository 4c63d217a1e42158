"""The execution environment's own state: identity, age, and whether it has served anything yet
(the warm-up ping's answer and ``/health`` read it)."""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class EnvironmentState:
    """Per execution environment: identity, age, and whether it has served anything yet."""

    def __init__(self, initialization_type: str) -> None:
        self.initialization_type = initialization_type
        self.environment_id = os.urandom(8).hex()
        self.started = time.monotonic()
        self.invoked = False  # any invocation, ping or business
        self.requests_served = 0  # business requests only
        # the warm-up inference: "off", "ok", or "failed: <why>" when a guessed example did
        # not run (Service.warm_up; /health shows it)
        self.warmup = "off"

    def first_invocation(self) -> bool:
        """True when this invocation waited for the init: the environment's first, unless it
        was initialised ahead of traffic (provisioned concurrency)."""
        first, self.invoked = not self.invoked, True
        return first and self.initialization_type != "provisioned-concurrency"

    def refresh(self) -> None:
        """After a SnapStart restore: a new environment that shares the snapshot's memory."""
        warmup = self.warmup  # (the snapshot's warm-up holds for the restored environment)
        self.__init__("snap-start")  # type: ignore[misc]
        self.warmup = warmup

    def answer(self, *, cold: bool, inference_ms: float, held_ms: float) -> dict[str, Any]:
        """The warm-up ping's answer."""
        return {"warm": True, "environmentId": self.environment_id, "coldStart": cold,
                "initializationType": self.initialization_type,
                "uptimeMs": round((time.monotonic() - self.started) * 1000.0, 3),
                "requestsServed": self.requests_served, "inferenceMs": round(inference_ms, 3),
                "heldMs": round(held_ms, 3)}
