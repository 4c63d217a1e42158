"""``should_stop`` for a generation: the invocation's deadline, with room for one more step
(standard library only: ``/predict`` and the OpenAI routes share it)."""

from __future__ import annotations

from handler.telemetry import now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Deadline:
    """``should_stop`` for the pipeline: True once the invocation's remaining time no longer
    covers the slowest decode step so far (the time between two calls) plus the margin for
    encoding and returning the answer."""

    __slots__ = ("_last", "_left", "_margin", "_step_ms", "expired", "timings")

    def __init__(self, context: Any, margin_ms: float) -> None:
        self._left = getattr(context, "get_remaining_time_in_millis", None)
        self._margin = margin_ms
        self._last: float | None = None
        self._step_ms = 0.0
        self.expired = False
        # what the generation reports for Server-Timing (``prefix-hit``: prompt tokens the
        # prefix cache held); the route adds them to the request's durations
        self.timings: dict[str, float] = {}

    def allows(self, needed_ms: float) -> bool:
        """Whether ``needed_ms`` (the first token's) fit before the margin."""
        return self._left is None or self._left() >= self._margin + needed_ms

    def decoding(self) -> None:
        """The first token is out: the steps timed from here on are decode steps (a prefill
        taken for one would end every later answer early by its length)."""
        self._last, self._step_ms = now(), 0.0

    def __call__(self) -> bool:
        if self._left is None:
            return False
        at = now()
        if self._last is not None:
            self._step_ms = max(self._step_ms, (at - self._last) * 1000.0)
        self._last = at
        left: float = self._left()
        self.expired = left < self._margin + self._step_ms
        return self.expired
