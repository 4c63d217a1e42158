"""Shared fixtures: tiny generated models and services built from them (no module reloads:
``handler.app.create`` takes settings, and settings take an environment mapping)."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.lambda_context import LambdaContext as Context  # noqa: F401 (tests import it here)
from onnx_lambda.source_tree import root
from tests.support import models, shared

EVENTS = root() / "events"  # events/generate.py writes them


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker (and every process it starts) on a core of its own
    (``ONNX_LAMBDA_TEST_PIN=0``: not): with one worker per core, a worker's two-thread ONNX
    Runtime pool, spinning between a decoder's steps, only took the core the other worker
    needed. The code under test sizes its pools from the CPUs it may use (``visible_cpus``)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if (not worker.startswith("gw") or os.environ.get("ONNX_LAMBDA_TEST_PIN") == "0"
            or not hasattr(os, "sched_setaffinity")):
        return
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[int(worker[2:]) % len(cpus)]})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with a ``slow`` test first, the rest in their order: under pytest-xdist's
    loadscope each module is one unit of work, and a minutes-long build handed out last would
    leave the other cores idle at the end."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


@pytest.fixture(scope="session", autouse=True)
def _worker_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist, each worker's own TMPDIR (for it and the processes it starts): code
    that names a file in the temporary folder by a fixed name cannot meet another worker's."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    folder = str(tmp_path_factory.mktemp("tmp", numbered=False))
    before, before_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = folder, folder
    yield
    tempfile.tempdir = before
    if before_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before_env


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    models.linear(folder / "linear.onnx")
    models.multi_io(folder / "multi_io.onnx")
    models.gather(folder / "gather.onnx")
    return folder


@pytest.fixture(scope="session")
def digits_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``onnx-lambda build-model digits``, built once per run for every tier (read-only)."""
    from onnx_lambda.cli import main

    def build(out: Path) -> None:
        assert main(["build-model", "digits", "-o", str(out)]) == 0

    return shared.artifact(tmp_path_factory, "digits", build)


@pytest.fixture
def make_service() -> Callable[..., Any]:
    """Build a ``Service`` for a model path with ONNX_LAMBDA_* overrides; logs are captured."""
    from handler.bootstrap import create
    from handler.settings import Settings

    def build(model: Path, **env: str) -> Any:
        variables = {"ONNX_LAMBDA_MODEL": str(model),
                     **{f"ONNX_LAMBDA_{k.upper()}": v for k, v in env.items()}}
        service = create(Settings.from_env(variables))
        service.telemetry.stream = io.StringIO()
        return service

    return build


@pytest.fixture
def linear_service(make_service: Callable[..., Any], model_dir: Path) -> Any:
    return make_service(model_dir / "linear.onnx")
