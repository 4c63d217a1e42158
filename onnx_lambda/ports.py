"""A free loopback TCP port, for a child process that must be told its port up front (the
emulator itself binds port 0 and reports the port it got)."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
