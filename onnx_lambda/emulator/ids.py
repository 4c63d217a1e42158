"""Request and trace ids for every invocation.

``uuid.uuid4()`` and ``secrets`` read the kernel's CSPRNG with one syscall per call; these
ids only need to be unique, not unpredictable, and four of them per request were a
visible cost on a small VM, so they come from :mod:`random` (seeded from the OS once).
"""

from __future__ import annotations

import random
import time

_random = random.Random()


# the version (4) and variant (RFC 4122) bits of a random UUID, as uuid.UUID sets them
_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_SET = (4 << 76) | (0x8000 << 48)


def request_id() -> str:
    """A version-4 UUID string, like Lambda's request ids (``uuid.UUID`` is slower)."""
    digits = f"{(_random.getrandbits(128) & _CLEAR) | _SET:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def trace_id() -> str:
    """An X-Ray trace header value (``Root=1-<time>-<24 hex>;Parent=<16 hex>;Sampled=0``)."""
    return (f"Root=1-{int(time.time()):08x}-{_random.getrandbits(96):024x};"
            f"Parent={_random.getrandbits(64):016x};Sampled=0")
