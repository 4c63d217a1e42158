"""The CPU share and the memory of an execution environment, as Lambda sizes them.

CPU: Lambda gives a function CPU in proportion to its memory (1,769 MB = one vCPU, at most
6 vCPUs at 10,240 MB). :class:`CpuLimiter` enforces that share with a CFS quota in a
cgroup v1 ``cpu`` controller when the host lets us create one (``mode == "cfs-quota"``),
otherwise approximates it by pinning the environment to whole cores (``"pinned"``), or does
nothing (``"off"``). The child joins its cgroup / affinity before ``exec`` (in
``preexec``), so init is limited too. A Managed Instances environment has its own vCPU count
(memory / GiB per vCPU), shared by all its processes: they inherit the cgroup / affinity.

Memory: measured as the sum of ``VmHWM`` (peak resident set) over the environment's process
tree, read from ``/proc``; this is both "Max Memory Used" and the value checked against the
memory size by polling (the environment is killed when it goes over).

Service quotas: the constants below are AWS's where AWS has one (the source page is named
beside each), ours where it has none; :class:`ServerLimits` bundles what one HTTP server
enforces (:mod:`.http11`).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import psutil

# "Quotas for configuring and running an HTTP API in API Gateway" (AWS docs)
HTTP_API_HEAD_BYTES = 10_240  # "Total combined size of request line and header values"
HTTP_API_PAYLOAD_BYTES = 10 * 1024 * 1024  # "Payload size: 10 MB"
HTTP_API_TIMEOUT_S = 30.0  # "Maximum integration timeout: 30 seconds"
# "Amazon API Gateway quotas", REST APIs: "Integration timeout: 50 milliseconds - 29 seconds"
REST_API_TIMEOUT_S = 29.0
# "Lambda quotas" (AWS docs): "Invocation payload (request and response): 6 MB each for
# synchronous and streamed invocations", 1 MB for asynchronous
LAMBDA_SYNC_PAYLOAD_BYTES = 6_291_456
LAMBDA_ASYNC_PAYLOAD_BYTES = 1_048_576
LAMBDA_SYNC_RESPONSE_BYTES = 6_291_556
# "Response streaming for Lambda functions" (AWS docs): "payloads up to 200 MB"; "The first
# 6 MB of your function's response payload has uncapped bandwidth. After this initial burst,
# Lambda streams your response at a maximum rate of 2 MBps."
LAMBDA_STREAM_RESPONSE_BYTES = 200 * 1024 * 1024
LAMBDA_STREAM_BURST_BYTES = 6 * 1024 * 1024
LAMBDA_STREAM_BYTES_PER_S = 2 * 1024 * 1024
# "Invoke" (Lambda API reference): "ClientContext: up to 3,583 bytes of base64-encoded data"
LAMBDA_CLIENT_CONTEXT_BYTES = 3_583
# ours: the HTTP API quota page documents no idle connection timeout; 310 s is the figure
# quoted for API Gateway elsewhere (not verified against an AWS page here)
IDLE_CONNECTION_TIMEOUT_S = 310.0
# ours (AWS documents none; CloudFront/ALB-style values): a request's head must arrive in
# this long, and its body must keep arriving (the timer restarts on every chunk)
HEAD_READ_TIMEOUT_S = 10.0
BODY_IDLE_TIMEOUT_S = 30.0
# ours: what the whole server holds in request bodies (unfinished, queued and in flight);
# 10 requests of API Gateway's maximum size
MAX_BUFFERED_BYTES = 10 * HTTP_API_PAYLOAD_BYTES
MAX_CONNECTIONS = 1_000  # ours: beyond it the longest-idle connection is closed
MAX_PIPELINED = 8  # ours: requests parsed ahead of the one in flight before reading pauses


class ServerLimits(NamedTuple):
    """What one HTTP server enforces (defaults: API Gateway's HTTP API front)."""

    max_head: int = HTTP_API_HEAD_BYTES
    max_body: int = HTTP_API_PAYLOAD_BYTES
    max_buffered: int = MAX_BUFFERED_BYTES
    max_connections: int = MAX_CONNECTIONS
    max_pipelined: int = MAX_PIPELINED
    idle_timeout_s: float | None = IDLE_CONNECTION_TIMEOUT_S
    head_timeout_s: float | None = HEAD_READ_TIMEOUT_S
    body_timeout_s: float | None = BODY_IDLE_TIMEOUT_S

MB_PER_VCPU = 1769
MAX_VCPUS = 6
CFS_PERIOD_US = 100_000
CGROUP_CPU_ROOT = Path("/sys/fs/cgroup/cpu")
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def vcpus_for(memory_mb: int) -> float:
    """The vCPU share Lambda gives ``memory_mb`` of memory."""
    return min(memory_mb / MB_PER_VCPU, MAX_VCPUS)


class CpuLimiter:
    """Creates one CPU limit per environment; ``mode`` says how it is enforced."""

    def __init__(self, mode: str = "auto") -> None:
        self._group_root: Path | None = None
        self._next_core = 0
        if mode in ("auto", "cfs-quota"):
            root = CGROUP_CPU_ROOT / f"onnx-lambda-{os.getpid()}-{secrets.token_hex(3)}"
            try:
                _remove_stale_groups()
                root.mkdir()
                self._group_root = root
                mode = "cfs-quota"
            except OSError:
                if mode == "cfs-quota":
                    raise
                mode = "pinned"
        if mode == "pinned" and not hasattr(os, "sched_setaffinity"):
            mode = "off"
        if mode not in ("cfs-quota", "pinned", "off"):
            raise ValueError(f"unknown CPU limit mode {mode!r}")
        self.mode = mode

    def describe(self, share: float) -> str:
        """``share``: the environment's vCPUs (``FunctionSpec.vcpus``)."""
        if self.mode == "cfs-quota":
            return f"cfs-quota {share:.2f} vCPU"
        if self.mode == "pinned":
            return f"pinned {self._cores_for(share)} core(s) for {share:.2f} vCPU"
        return "unlimited"

    def _cores_for(self, share: float) -> int:
        return max(1, min(math.ceil(share), os.cpu_count() or 1))

    def prepare(self, env_id: str, share: float) -> Callable[[], None]:
        """Set up the limit of ``share`` vCPUs for one environment; returns the ``preexec``
        step for its child (whose forked children, a Managed Instances environment's workers,
        share it)."""
        if self.mode == "cfs-quota":
            assert self._group_root is not None
            group = self._group_root / env_id
            group.mkdir(exist_ok=True)
            (group / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(max(1000, int(share * CFS_PERIOD_US))))
            procs = str(group / "cgroup.procs")

            def join_cgroup() -> None:
                with open(procs, "w") as fh:
                    fh.write(str(os.getpid()))

            return join_cgroup
        if self.mode == "pinned":
            ncpu = os.cpu_count() or 1
            cores = {(self._next_core + i) % ncpu for i in range(self._cores_for(share))}
            self._next_core = (self._next_core + len(cores)) % ncpu
            return lambda: os.sched_setaffinity(0, cores)
        return lambda: None

    def release(self, env_id: str) -> None:
        if self._group_root is not None:
            # already gone, or a straggler still inside: removed with the root
            with contextlib.suppress(OSError):
                (self._group_root / env_id).rmdir()

    def close(self) -> None:
        """Remove the cgroups (the kernel may need a moment after the last exit)."""
        if self._group_root is None:
            return
        for _ in range(50):
            try:
                for group in self._group_root.iterdir():
                    if group.is_dir():
                        group.rmdir()
                self._group_root.rmdir()
                break
            except OSError:
                time.sleep(0.02)
        self._group_root = None


def _remove_stale_groups() -> None:
    """Remove the (empty) cgroups of emulators that died without cleaning up."""
    for root in CGROUP_CPU_ROOT.glob("onnx-lambda-*"):
        owner = root.name.split("-")[2]
        if owner.isdigit() and psutil.pid_exists(int(owner)):
            continue
        with contextlib.suppress(OSError):
            for group in root.iterdir():
                if group.is_dir():
                    group.rmdir()
            root.rmdir()


def die_with_parent() -> None:
    """``preexec`` step: the child gets SIGKILL if the emulator dies (no orphans)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its live descendants."""
    try:
        return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


class PeakRss:
    """Peak resident set (``VmHWM``) summed over a process tree, in MB.

    The ``/proc/PID/status`` files stay open and are re-read with ``pread`` (procfs
    regenerates them at offset 0): a read costs a syscall, not an open/read/close.
    """

    def __init__(self, pid: int) -> None:
        self._fds: dict[int, int] = {}
        self.track([pid])

    def track(self, pids: Iterable[int]) -> None:
        """Follow exactly ``pids`` from now on."""
        wanted = set(pids)
        for pid in set(self._fds) - wanted:
            os.close(self._fds.pop(pid))
        for pid in wanted - set(self._fds):
            with contextlib.suppress(OSError):
                self._fds[pid] = os.open(f"/proc/{pid}/status", os.O_RDONLY)

    def mb(self) -> float:
        total_kb = 0
        for fd in self._fds.values():
            try:
                status = os.pread(fd, 8192, 0)
            except OSError:  # the process is gone
                continue
            start = status.find(b"VmHWM:")
            if start >= 0:
                total_kb += int(status[start + 6:status.index(b"kB", start)])
        return total_kb / 1024

    def close(self) -> None:
        self.track(())
