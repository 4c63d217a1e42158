"""Request and trace ids for every invocation.

``uuid.uuid4()`` and ``secrets`` read the kernel's CSPRNG with one syscall per call; these
ids only need to be unique, not unpredictable, and four of them per request were a
visible cost on a small VM, so they come from :mod:`random` (seeded from the OS once).
"""

from __future__ import annotations

import random
import time
import uuid

_random = random.Random()


def request_id() -> str:
    """A version-4 UUID string, like Lambda's request ids."""
    return str(uuid.UUID(int=_random.getrandbits(128), version=4))


def trace_id() -> str:
    """An X-Ray trace header value (``Root=1-<time>-<24 hex>;Parent=<16 hex>;Sampled=0``)."""
    return (f"Root=1-{int(time.time()):08x}-{_random.getrandbits(96):024x};"
            f"Parent={_random.getrandbits(64):016x};Sampled=0")
