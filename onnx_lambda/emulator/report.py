"""Per-invocation records and the log lines Lambda writes around an invocation.

``START``/``END``/``REPORT`` follow Lambda's format; the REPORT line ends with two fields
of our own, ``CPU:`` and ``Memory Limit:``, saying how the limits were enforced.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass

LOG_TAIL_BYTES = 4096


@dataclass(frozen=True)
class InvocationRecord:
    """What happened in one invocation (the numbers of Lambda's REPORT line and more)."""

    function: str
    request_id: str
    environment_id: str
    version: str
    cold: bool  # the environment was started for this invocation
    initialization_type: str  # on-demand | provisioned-concurrency
    init_ms: float | None  # spawn -> the runtime's first /next (cold invocations only)
    duration_ms: float  # invocation delivered -> response/error received
    billed_ms: int
    memory_size_mb: int
    max_memory_used_mb: int
    error_type: str | None  # None on success
    cpu_limit: str
    memory_limit: str

    def start_line(self) -> str:
        return start_line(self.request_id, self.version)

    def end_line(self) -> str:
        return f"END RequestId: {self.request_id}"

    def report_line(self) -> str:
        fields = [
            f"REPORT RequestId: {self.request_id}",
            f"Duration: {self.duration_ms:.2f} ms",
            f"Billed Duration: {self.billed_ms} ms",
            f"Memory Size: {self.memory_size_mb} MB",
            f"Max Memory Used: {self.max_memory_used_mb} MB",
        ]
        if self.init_ms is not None:
            fields.append(f"Init Duration: {self.init_ms:.2f} ms")
        if self.error_type:
            fields.append(f"Status: error\tError Type: {self.error_type}")
        fields.append(f"CPU: {self.cpu_limit}")
        fields.append(f"Memory Limit: {self.memory_limit}")
        return "\t".join(fields)


def start_line(request_id: str, version: str) -> str:
    return f"START RequestId: {request_id} Version: {version}"


def billed_ms(duration_ms: float, init_ms: float | None) -> int:
    """Lambda bills duration rounded up to 1 ms; the INIT phase of on-demand environments is
    billed too (since August 2025, for all runtimes and container images)."""
    return max(1, math.ceil(duration_ms + (init_ms or 0.0)))


def log_tail(record: InvocationRecord, function_log: str) -> str:
    """Base64 of the last 4 KB of the invocation's log, as in ``X-Amz-Log-Result``."""
    body = [function_log.rstrip("\n")] if function_log.strip() else []
    lines = [record.start_line(), *body, record.end_line(), record.report_line()]
    text = "\n".join(lines) + "\n"
    return base64.b64encode(text.encode()[-LOG_TAIL_BYTES:]).decode()
