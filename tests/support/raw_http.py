"""Raw HTTP/1.1 over sockets, for hostile tests and attack measurements (loopback only)."""

from __future__ import annotations

import json
import socket
from typing import Any

HOST = "127.0.0.1"


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Reader:
    """Reads successive responses (``Content-Length`` bodies) from one socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        self.buffer += data
        return bool(data)

    def response(self) -> tuple[int, dict[str, str], bytes] | None:
        """The next response, or None when the server closed the connection first."""
        while b"\r\n\r\n" not in self.buffer:
            if not self._fill():
                return None
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            if not self._fill():
                return None
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(lines[0].split()[1]), headers, body

    def closed(self) -> bool:
        """True when the server closes (EOF or reset) with nothing more to read."""
        try:
            return not self.buffer and not self._fill()
        except ConnectionResetError:
            return True


def request(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
            ) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], Any]:
    """Send ``data`` on a new connection; the first response, its body parsed as JSON."""
    with connect(port) as sock:
        sock.sendall(data)
        answer = Reader(sock).response()
    assert answer is not None, "connection closed without a response"
    status, headers, body = answer
    return status, headers, json.loads(body) if body else None
