"""The unit tier's rule, enforced: no network socket, no child process.

``guard`` patches the calls every such attempt goes through (``socket.socket.connect``,
``connect_ex`` and ``bind`` for any family but ``AF_UNIX``; ``subprocess.Popen``, ``os.fork``,
``os.forkpty``, ``os.posix_spawn[p]``, ``os.system`` and ``_posixsubprocess.fork_exec``, which
multiprocessing uses) so that the attempt fails the test. The failure is ``pytest.fail``'s (a
``BaseException``: an ``except Exception`` in the code under test cannot swallow it), and it is
recorded too, so a test that swallows even that still fails at teardown (``check``).
"""

from __future__ import annotations

import _posixsubprocess
import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

MOVE = "a unit test may not {what}; move it to tests/functional or tests/e2e (tests/README.md)"


@contextmanager
def guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Patch the guarded calls for the block; yields the list of recorded attempts."""
    attempts: list[str] = []

    def refuse(what: str) -> None:
        attempts.append(what)
        pytest.fail(MOVE.format(what=what), pytrace=False)

    def network(name: str) -> Any:
        original = getattr(socket.socket, name)

        def call(sock: socket.socket, address: Any, *args: Any) -> Any:
            if sock.family != socket.AF_UNIX:
                # closed here: create_connection's cleanup catches OSError, not pytest's failure
                sock.close()
                refuse(f"open a network socket ({name} {address!r})")
            return original(sock, address, *args)

        return call

    def process(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            refuse(f"start a process ({name})")

        return call

    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, network(name))
    monkeypatch.setattr(subprocess.Popen, "__init__", process("subprocess.Popen"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        monkeypatch.setattr(os, name, process(f"os.{name}"))
    monkeypatch.setattr(_posixsubprocess, "fork_exec", process("_posixsubprocess.fork_exec"))
    yield attempts


def check(attempts: list[str]) -> None:
    """Fail (at teardown) when the test attempted any of it, even if it caught the failure."""
    if attempts:
        pytest.fail(MOVE.format(what="; ".join(attempts)), pytrace=False)
