"""What every written report shares: the machine it ran on, numbers as table cells and
Markdown tables."""

from __future__ import annotations

import math
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def load_average() -> tuple[float, ...]:
    """1, 5 and 15 minute load averages (above the core count = a busy machine)."""
    return tuple(round(x, 2) for x in os.getloadavg())


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import onnxruntime

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu,
            "cores": os.cpu_count(), "load_average": load_average(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
                               1),
            "python": platform.python_version(), "platform": platform.platform(),
            "onnxruntime": onnxruntime.__version__, "commit": commit or "unknown"}


def fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:,.{digits}f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows), ""]
