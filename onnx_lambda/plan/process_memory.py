"""Memory of N handler processes initialised side by side, as one Lambda Managed Instances
execution environment runs them (one Python process per concurrent request, each with its own
init). RSS counts the shared pages (libonnxruntime, numpy, the interpreter) in every process;
PSS splits them between the processes that share them: the sum of PSS is what the
environment's memory really holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from onnx_lambda.source_tree import root

# What a worker does before its first request: import the handler (settings, model, warm-up).
CHILD = "import time, handler.app; print('ready', flush=True); time.sleep(300)"


class ProcessMemory(NamedTuple):
    processes: int
    rss_mb: float  # sum over the processes
    pss_mb: float  # sum over the processes

    @property
    def per_process_mb(self) -> float:
        """The memory budget of one more process (PSS: shared pages split)."""
        return self.pss_mb / self.processes


def rollup(pid: int) -> dict[str, float]:
    values = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
        for line in fh:
            name, _, rest = line.partition(":")
            if name in ("Rss", "Pss"):
                values[name] = int(rest.split()[0]) / 1024.0
    return values


def measure(model: Path, processes: int, *, timeout_s: float = 300.0) -> ProcessMemory:
    """Start ``processes`` handler processes on ``model``, wait until every one has
    initialised, read their RSS and PSS (Linux ``/proc``), stop them."""
    env = {**os.environ, "ONNX_LAMBDA_MODEL": str(model.resolve()), "ONNX_LAMBDA_METRICS": "0",
           "AWS_LAMBDA_MAX_CONCURRENCY": str(processes), "PYTHONPATH": str(root())}
    children = [subprocess.Popen([sys.executable, "-c", CHILD], cwd=root(), env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(processes)]
    try:
        for child in children:
            assert child.stdout is not None
            lines = iter(child.stdout.readline, "")  # its init log lines, then "ready"
            if not any(line.strip() == "ready" for line in lines):  # EOF: it died, say why
                _, err = child.communicate(timeout=timeout_s)
                tail = err.strip().splitlines()[-1:] or ["no output"]
                raise RuntimeError(f"a handler process on {model} failed: {tail[0]}")
        rollups = [rollup(child.pid) for child in children]
    finally:
        for child in children:
            child.kill()
            child.communicate()  # reaps it and closes its pipes
    return ProcessMemory(processes, sum(r["Rss"] for r in rollups),
                         sum(r["Pss"] for r in rollups))
