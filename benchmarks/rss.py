"""Peak resident set of this process, in MB, and the floor probes' one-line report (stdlib only:
imported by cold-start probes).

``VmHWM`` from ``/proc/self/status`` belongs to the address space, so it starts afresh at
``exec``; ``getrusage().ru_maxrss`` does not on Linux (a child inherits its parent's peak),
so it over-reports for a process spawned by a big parent.
"""

from __future__ import annotations

import json
import resource


def peak_rss_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def print_floor_line(started_at: float, t0: float, imported: float, loaded: float,
                     done: float) -> None:
    """The JSON line every floor baseline prints: ``started_at`` (epoch), ``imports``,
    ``model-load``, ``first-request`` (ms between the perf_counter marks) and ``rss_mb``."""
    print(json.dumps({"started_at": started_at, "imports": (imported - t0) * 1e3,
                      "model-load": (loaded - imported) * 1e3,
                      "first-request": (done - loaded) * 1e3, "rss_mb": peak_rss_mb()}))
