"""Before/after figures for the summary: file size, session load time, inference p50.

Both sides are loaded the way the runtime loads them (``handler.model.Model``): the raw file as a
bare ``.onnx`` (online optimization ``basic``), the artifact from its folder and manifest
(online optimization off when it was optimized offline for this onnxruntime version).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from handler.artifact import Artifact, resolve
from handler.model import Model, threads_for, visible_cpus
from onnx_lambda.stats import median

LOADS = 3
MAX_RUNS = 200
MAX_SECONDS = 3.0


@dataclass(frozen=True)
class Figures:
    size_bytes: int
    load_ms: float
    p50_ms: float


def load_raw(path: Path, threads: int | None = None) -> Model:
    return Model(Artifact(path, None, path.suffix == ".ort"),
                 threads=threads or threads_for(None, visible_cpus()), graph_optimization="auto")


def load_folder(folder: Path, threads: int | None = None) -> Model:
    artifact = resolve(str(folder), ort_version=ort.__version__, verify="never",
                       cache_dir=str(folder))
    return Model(artifact, threads=threads or threads_for(None, visible_cpus()),
                 graph_optimization="auto")


def figures(load: Callable[[Path], Model], target: Path, size_bytes: int,
            feeds: dict[str, np.ndarray]) -> tuple[Figures, Model]:
    """``load(target)`` timed ``LOADS`` times (median), then ``run(feeds)`` p50; also returns
    the loaded model."""
    load_times = []
    for _ in range(LOADS):
        start = time.perf_counter()
        model = load(target)
        load_times.append((time.perf_counter() - start) * 1000.0)
    return Figures(size_bytes, median(load_times), p50(model, feeds)), model


def p50(model: Model, feeds: dict[str, np.ndarray]) -> float:
    return interleaved([model], feeds)[0][0]


def interleaved(models: Sequence[Model], feeds: dict[str, np.ndarray],
                max_seconds: float = MAX_SECONDS) -> list[tuple[float, float]]:
    """Each model's p50 of ``run(feeds)``, (wall ms, CPU ms), the models run in turn round by
    round so that load on the machine hits each alike, for at most ``max_seconds`` each. CPU
    time is the calling thread's: a one-thread session computes on it, so on a shared machine
    it is the steadier figure (it leaves out the time other processes held the core)."""
    for model in models:
        for _ in range(5):
            model.run(feeds)
    wall: list[list[float]] = [[] for _ in models]
    cpu: list[list[float]] = [[] for _ in models]
    deadline = time.perf_counter() + max_seconds * len(models)
    while len(wall[0]) < MAX_RUNS and time.perf_counter() < deadline:
        for index, model in enumerate(models):
            start, start_cpu = time.perf_counter(), time.thread_time()
            model.run(feeds)
            cpu[index].append((time.thread_time() - start_cpu) * 1000.0)
            wall[index].append((time.perf_counter() - start) * 1000.0)
    return [(median(w), median(c)) for w, c in zip(wall, cpu, strict=True)]


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
