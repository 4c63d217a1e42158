"""SnapStart runtime hooks (zip + layer variant, Python 3.12+ managed runtime).

With SnapStart, Lambda runs the module scope once when a version is published, snapshots the
memory, and resumes every new environment from that snapshot. So:

- before the snapshot: one warm-up inference, so the snapshot holds a session whose arena and
  kernels are already primed;
- after each restore: anything that must differ between environments is refreshed (the
  caller's ``on_restore``: environment id, start time) and the random generators are reseeded,
  since every restored environment would otherwise replay the same sequence.

The hooks come from ``snapshot_restore_py``, which the managed runtime ships; it is imported
only when ``AWS_LAMBDA_INITIALIZATION_TYPE`` is ``snap-start``.
"""

from __future__ import annotations

import logging
import os
import random
import sys
from collections.abc import Callable, Mapping

logger = logging.getLogger(__name__)


def reseed() -> None:
    """Fresh entropy for ``random`` and, when numpy is already loaded, its legacy global RNG."""
    random.seed(os.urandom(32))
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(int.from_bytes(os.urandom(4), "little"))


def register(
    warm_up: Callable[[], None],
    on_restore: Callable[[], None],
    env: Mapping[str, str] | None = None,
) -> bool:
    """Register the hooks when running under SnapStart; return whether they were registered."""
    env = os.environ if env is None else env
    if env.get("AWS_LAMBDA_INITIALIZATION_TYPE") != "snap-start":
        return False
    try:
        # Lazy: only the managed runtime has it, and only SnapStart needs it.
        from snapshot_restore_py import (
            register_after_restore,
            register_before_snapshot,
        )
    except ImportError:
        logger.warning("SnapStart is on but snapshot_restore_py is missing: "
                       "restored environments will share ids and random state")
        return False

    def after_restore() -> None:
        reseed()
        on_restore()

    register_before_snapshot(warm_up)
    register_after_restore(after_restore)
    return True
