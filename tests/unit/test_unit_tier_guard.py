"""The unit tier's guard (tests/unit/conftest.py) fails a test that opens a network socket or
starts a process, even one that catches the failure; a Unix socket stays allowed."""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import tier_guard


def _tcp_connect() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.connect(("127.0.0.1", 9))


def _udp_bind() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))


def _ipv6_connect_ex() -> None:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
        sock.connect_ex(("::1", 9))


def _fork() -> None:
    pid = os.fork()
    if pid == 0:  # only if the guard were broken: the child must not run the suite on
        os._exit(0)
    os.waitpid(pid, 0)


def _spawned_process() -> None:
    process = multiprocessing.get_context("spawn").Process(target=print)
    process.start()
    process.join()


@pytest.mark.parametrize("attempt", [
    _tcp_connect, _udp_bind, _ipv6_connect_ex,
    lambda: socket.create_connection(("127.0.0.1", 9), timeout=1),
    lambda: subprocess.run(["true"], check=False),
    _fork,
    lambda: os.posix_spawn("/bin/true", ["true"], os.environ),
    lambda: os.system("true"),
    _spawned_process,
], ids=["connect", "bind", "connect_ex", "create_connection", "subprocess.run", "os.fork",
        "os.posix_spawn", "os.system", "multiprocessing spawn"])
def test_each_attempt_fails_the_test(unit_tier: list[str], attempt: Callable[[], object]) -> None:
    try:
        attempt()
    except Exception:  # what code under test might do: it must not hide the attempt
        pytest.fail("the guard's failure was an Exception, swallowable by the code under test")
    except pytest.fail.Exception as failure:
        assert "move it to tests/functional or tests/e2e" in str(failure)
    else:
        pytest.fail("the attempt went through")
    assert len(unit_tier) == 1
    with pytest.raises(pytest.fail.Exception):  # teardown fails the test on what was recorded
        tier_guard.check(unit_tier)
    unit_tier.clear()  # this test's attempts were the point: let it pass


def test_unix_sockets_are_allowed(unit_tier: list[str], tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)
    left, right = socket.socketpair()  # asyncio's self-pipe
    left.close()
    right.close()
    assert unit_tier == []

