"""Peak resident set of this process, in MB (stdlib only: imported by cold-start probes).

``VmHWM`` from ``/proc/self/status`` belongs to the address space, so it starts afresh at
``exec``; ``getrusage().ru_maxrss`` does not on Linux (a child inherits its parent's peak),
so it over-reports for a process spawned by a big parent.
"""

from __future__ import annotations

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
