"""Build a ready ``Service`` from settings: everything the init phase does.

``handler.app`` calls this at module scope with the environment's settings; tests call it with
their own, so no test needs module reloads.
"""

from __future__ import annotations

import os
import time

from handler import artifact, pipelines
from handler.errors import ModelLoadError
from handler.model import Model, threads_for, visible_cpus
from handler.ort import capi, providers
from handler.service import Service
from handler.settings import Settings
from handler.telemetry import Telemetry


def graph_optimization(setting: str, pipeline: str) -> str:
    """The online level: the setting, except that ``auto`` is ``all`` for a decoder. Its
    online-only rewrites are not kept in an offline-optimized file, and they pay: a 246 M
    parameter int4 decoder made 87.7 tokens per CPU-second with them against 76.5–81.0 without
    (onnxruntime-genai, which applies them, 82.9–89.4 in the same runs), its session loading in
    217–267 ms against 236–279 ms (benchmarks.generation's targets, 8 interleaved rounds)."""
    return "all" if setting == "auto" and pipeline == "generate" else setting


def spinning(pipeline: str, threads: int) -> bool:
    """Whether the pool's threads spin between ops: for a decoder on more than one thread. Its
    steps follow each other with ~0.1 ms of Python between them, so parked threads are woken
    dozens of times a token; a request that spins uses the vCPUs its memory size pays for
    anyway. Measured at 2 threads on the 246 M-parameter int4 decoder: onnxruntime-genai made
    139 tokens/s spinning against 112 with spinning off, ours 108 with it off
    (benchmarks.generation; docs/explanation/generation-performance.md)."""
    return pipeline == "generate" and threads > 1


def create(settings: Settings) -> Service:
    started = time.perf_counter()
    telemetry = Telemetry(namespace=settings.metrics_namespace,
                          function_name=settings.function_name, metrics=settings.metrics,
                          level=settings.log_level)
    try:
        ort_version = capi.version()  # the C library's own (GetVersionString)
    except capi.LibraryError as exc:
        raise ModelLoadError(str(exc)) from exc
    found = artifact.resolve(settings.model, ort_version=ort_version,
                             verify=settings.verify, cache_dir=settings.s3_cache_dir)
    if settings.unknown:
        telemetry.log("warning", f"ignored unknown variables: {', '.join(settings.unknown)}")
    if found.warning:
        telemetry.log("warning", found.warning)
    threads = settings.threads or threads_for(settings.memory_mb, visible_cpus())
    manifest = found.manifest
    try:
        provider = providers.choose(settings.execution_provider, env=os.environ,
                                    manifest_allows=(manifest is None
                                                     or manifest.gpu.get("suitable") is not False))
    except providers.ProviderError as exc:
        raise ModelLoadError(str(exc)) from exc
    name = settings.pipeline or (manifest.pipeline if manifest else "tensor")
    model = Model(found, threads=threads,
                  graph_optimization=graph_optimization(settings.graph_optimization, name),
                  name=settings.model_name, provider=provider,
                  spinning=spinning(name, threads))
    pipeline = pipelines.load(name, model, manifest.pipeline_options if manifest else {})
    pipeline.configure(settings)
    if pipeline.warning:
        telemetry.log("warning", pipeline.warning)
    loaded = time.perf_counter()
    durations = {"model-load": (loaded - started) * 1000.0}
    service = Service(settings, model, pipeline, telemetry, durations)
    if settings.warmup:
        try:
            service.warm_up()
        except Exception as exc:  # the manifest's example does not run: a broken artifact
            raise ModelLoadError(f"warm-up inference failed: the manifest's example does not "
                                 f"run: {exc}") from exc
        durations["warmup"] = (time.perf_counter() - loaded) * 1000.0
    return service
