"""Before/after figures for the summary: file size, session load time, inference p50.

Both sides are loaded the way the runtime loads them (``handler.model.Model``): the raw file as a
bare ``.onnx`` (online optimization ``basic``), the artifact from its folder and manifest
(online optimization off when it was optimized offline for this onnxruntime version).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from handler.artifact import Artifact, resolve
from handler.model import Model, threads_for, visible_cpus
from onnx_lambda.bench.stats import median

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
    for _ in range(5):
        model.run(feeds)
    times: list[float] = []
    deadline = time.perf_counter() + MAX_SECONDS
    while len(times) < MAX_RUNS and time.perf_counter() < deadline:
        start = time.perf_counter()
        model.run(feeds)
        times.append((time.perf_counter() - start) * 1000.0)
    return median(times)


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
