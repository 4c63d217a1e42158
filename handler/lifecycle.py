"""A clean stop on SIGTERM.

Lambda Managed Instances stop every runtime process of an execution environment with SIGTERM
(and the standard runtime sends it when extensions are registered). Python's default is to die
on the spot, without a word in the log; here the process writes one JSON line saying it stops
and exits with status 0, so a scale-in reads as a shutdown, not as a crash.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def stop_cleanly_on_sigterm(log: Callable[..., Any]) -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        log("info", "shutdown", signal="SIGTERM", pid=os.getpid())
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
