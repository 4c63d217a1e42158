"""Artifacts built once per test run and shared by every tier and every pytest-xdist worker: a
model export or build that several files need costs its minutes once, not once per file and
worker. Each artifact is a folder under the run's own temporary folder (the workers' common
basetemp), made under an exclusive ``flock`` by whichever worker asks first; the others wait on
the lock and then read the finished folder. A test must not write into a shared folder: copy it
to ``tmp_path`` first.

    @pytest.fixture(scope="session")
    def smollm(tmp_path_factory):
        return shared.artifact(tmp_path_factory, "smollm-fp32",
                               lambda out: build(["smollm", "-o", str(out)]))
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT_VARIABLE = "ONNX_LAMBDA_TEST_SHARED"


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """Where this run's shared artifacts live: ``$ONNX_LAMBDA_TEST_SHARED`` (scripts/test sets it
    for both its passes), else the folder every worker of this pytest run shares: pytest's
    basetemp, or under pytest-xdist the controller's, which holds each worker's (``popen-gwN``)."""
    if os.environ.get(ROOT_VARIABLE):
        return Path(os.environ[ROOT_VARIABLE])
    base = factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (made if missing), across processes."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def artifact(factory: pytest.TempPathFactory, name: str,
             build: Callable[[Path], object]) -> Path:
    """The folder ``name``, made by ``build(folder)`` once in this run whoever asks for it. A
    build that raises leaves nothing behind, and the next caller tries again (and fails the same
    way, in its own test)."""
    root = shared_root(factory)
    root.mkdir(parents=True, exist_ok=True)
    folder, done = root / name, root / f"{name}.built"  # done: written when the build returned
    with locked(root / f"{name}.lock"):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            try:
                build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            done.touch()
    return folder
