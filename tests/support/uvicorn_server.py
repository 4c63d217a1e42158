"""The alternative measured against :mod:`onnx_lambda.emulator.http11`: the same handlers
served by uvicorn's httptools protocol (uvicorn's own limits and timeouts) through a thin
ASGI adapter. A prototype for the comparison in docs/explanation/emulator.md, not a supported
server: ``answer_early`` (API Gateway's timeout answer) and refusal shapes are not carried over.

Run the emulator's bench (or the attacks) on it::

    ONNX_LAMBDA_HTTP=uvicorn PYTHONPATH=tests/support/uvicorn_site \\
        .venv/bin/python -m benchmarks.emulator_overhead

(``uvicorn_site/sitecustomize.py`` calls :func:`install` in every process started so.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from onnx_lambda.emulator.http_types import Handler, Request, Response
from onnx_lambda.emulator.limits import ServerLimits


class UvicornServer:
    """:class:`~onnx_lambda.emulator.http11.HttpServer`'s interface on uvicorn."""

    def __init__(self, handler: Handler, *, limits: ServerLimits | None = None,
                 refusal: Callable[[int, str], Response] | None = None,
                 cancel_on_disconnect: bool = True) -> None:
        self.handler = handler
        self.limits = limits or ServerLimits()
        self.port = 0
        self._server: asyncio.Server | None = None
        del refusal, cancel_on_disconnect  # uvicorn answers its own way

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body, more = [], True
        while more:
            message = await receive()
            body.append(message.get("body", b""))
            more = message.get("more_body", False)
        request = Request(
            method=scope["method"], raw_path=scope["raw_path"].decode("latin-1"),
            raw_query=scope["query_string"].decode("latin-1"), raw_headers=scope["headers"],
            body=b"".join(body), version=scope["http_version"],
            peer=(scope.get("client") or ("127.0.0.1",))[0])
        result = self.handler(request)
        response = result if isinstance(result, Response) else await result
        await send({"type": "http.response.start", "status": response.status,
                    "headers": [(b"content-length", b"%d" % len(response.body)),
                                *((k.encode("latin-1"), v.encode("latin-1"))
                                  for k, v in response.headers)]})
        await send({"type": "http.response.body", "body": response.body})

    async def start(self, host: str, port: int) -> int:
        limits = self.limits
        config = Config(app=self._app, http="httptools", interface="asgi3", lifespan="off",
                        access_log=False,
                        limit_concurrency=limits.max_connections,
                        timeout_keep_alive=int(limits.idle_timeout_s or 3600))
        config.load()
        state = ServerState()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HttpToolsProtocol(config=config, server_state=state, app_state={}),
            host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


def install() -> None:
    """Make the emulator build :class:`UvicornServer` wherever it builds an ``HttpServer``."""
    from onnx_lambda.emulator import http11, runtime_api, server

    for module in (http11, runtime_api, server):
        module.HttpServer = UvicornServer  # type: ignore[attr-defined, misc]
