"""Event sources: each module says whether an event is its own and converts it to a ``Request``
and a ``Response`` back to the shape that source expects. ``SOURCES`` are tried in a fixed order
(the most specific first); an event none of them claims is a direct invocation (``DIRECT``, the
event is the body). Add your own with ``register``. Modules: ``function_url``, ``http_api``,
``rest_api``, ``alb``, ``direct``; ``base`` is the protocol and the shared field helpers.
"""

from __future__ import annotations

from handler.sources.alb import ALB
from handler.sources.base import EventSource
from handler.sources.direct import DIRECT
from handler.sources.function_url import FUNCTION_URL
from handler.sources.http_api import HTTP_API
from handler.sources.rest_api import REST_API

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# (HTTP API and Function URL events exclude each other: the usual front door is tried first)
SOURCES: list[EventSource] = [HTTP_API, FUNCTION_URL, REST_API, ALB]


def detect(event: Any) -> EventSource:
    for source in SOURCES:
        if source.matches(event):
            return source
    return DIRECT


def register(source: EventSource, index: int = 0) -> None:
    """Insert a custom source (by default before all built-ins)."""
    SOURCES.insert(index, source)


__all__ = ["DIRECT", "SOURCES", "EventSource", "detect", "register"]
