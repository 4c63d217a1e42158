"""Byte counts as people read them, for every report the tooling prints."""

from __future__ import annotations


def human_size(n: float) -> str:
    """``512 B``, ``3.2 KiB``, ``86.1 MiB``, ``1.4 GiB`` (binary units, one decimal)."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            break
    return f"{n:.1f} {unit}"
