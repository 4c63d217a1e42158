"""A real S3 API (moto's server) on a free loopback port, counting object GETs, for tests whose
processes share one S3: ``s3_server`` points boto3 in this process and its children at it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest


class Counting:
    """WSGI middleware: counts object GETs and slows them, so the processes' inits overlap."""

    def __init__(self, app: Callable[..., Any], delay_s: float) -> None:
        self.app, self.delay_s, self.gets = app, delay_s, 0
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        is_get = environ["REQUEST_METHOD"] == "GET" and not environ.get("QUERY_STRING")
        if is_get:
            with self.lock:
                self.gets += 1
            time.sleep(self.delay_s)
        return self.app(environ, start_response)


@pytest.fixture(name="s3_server")
def s3_server_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Counting]]:
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    counting = Counting(DomainDispatcherApplication(create_backend_app), delay_s=0.5)
    server = make_server("127.0.0.1", 0, counting, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    for name, value in {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "test",
                        "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    try:
        yield url, counting
    finally:
        server.shutdown()
        server.server_close()  # its listening socket
        thread.join(timeout=10)
