"""The emulator as one object: template -> pools of environments -> HTTP fronts.

:class:`Emulator` owns one :class:`~.pool.FunctionPool` per function of the template and one
HTTP server (:mod:`.http11`) that carries both the template's API routes and the Lambda Invoke API
(Function URLs get a port each). Use it from asyncio (``await emu.start()`` /
``await emu.invoke(...)`` / ``await emu.stop()``) or from synchronous code with
``with emu.running(): ...``, which runs the event loop in a background thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import signal
import ssl
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import uvloop

from onnx_lambda.emulator.http11 import Handler, HttpServer, Request, Response
from onnx_lambda.emulator.http_front import api_handler, function_url_handler
from onnx_lambda.emulator.http_stream import BodyStream
from onnx_lambda.emulator.invoke_api import (
    PATH,
    invoke_handler,
    invoked_function,
    refusal,
    resolve_target,
)
from onnx_lambda.emulator.limits import CpuLimiter, ServerLimits
from onnx_lambda.emulator.network_delay import delayed
from onnx_lambda.emulator.pool import FunctionPool, InvokeResult, PoolConfig
from onnx_lambda.emulator.report import InvocationRecord
from onnx_lambda.emulator.template import TemplateSpec, load_template

T = TypeVar("T")


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


class Emulator:
    """A local Lambda + API Gateway for the functions of one SAM template."""

    def __init__(self, template: TemplateSpec | str | Path, *, host: str = "127.0.0.1",
                 port: int = 3000, parameter_overrides: Mapping[str, str] | None = None,
                 env_vars: Mapping[str, Mapping[str, str]] | None = None,
                 memory_mb: int | None = None, timeout_s: float | None = None,
                 provisioned: int | None = None, concurrency: int = 4,
                 idle_timeout_s: float = 600.0, init_timeout_s: float = 10.0,
                 cpu_limit: str = "auto", enforce_memory: bool = True,
                 http_limits: ServerLimits | None = None, tls: bool = False,
                 network_delay_ms: float = 0.0,
                 log: Callable[[str], None] | None = _stderr) -> None:
        spec = template if isinstance(template, TemplateSpec) else load_template(
            template, parameter_overrides)
        changes: dict[str, Any] = {k: v for k, v in (
            ("memory_mb", memory_mb), ("timeout_s", timeout_s), ("provisioned", provisioned),
        ) if v is not None}
        self.functions = {name: dataclasses.replace(f, **changes)
                          for name, f in spec.functions.items()}
        self.routes = spec.routes
        self.host, self.port = host, port
        self._log = log or (lambda _line: None)
        self._env_vars = env_vars or {}
        self._pool_config = dict(concurrency=concurrency, idle_timeout_s=idle_timeout_s,
                                 init_timeout_s=init_timeout_s, enforce_memory=enforce_memory)
        self._cpu_mode = cpu_limit
        self._http_limits = http_limits or ServerLimits()  # API Gateway's, by default
        self.tls = tls  # the HTTP front and Function URLs over HTTPS (self-signed, made at start)
        self.tls_cert: Path | None = None
        if network_delay_ms < 0:
            raise ValueError(f"network delay must be ≥ 0 ms, got {network_delay_ms:g}")
        self.network_delay_ms = network_delay_ms  # one way, on the front (.network_delay)
        self._tls_context: ssl.SSLContext | None = None
        self.pools: dict[str, FunctionPool] = {}
        self.function_urls: dict[str, str] = {}
        self._servers: list[HttpServer] = []
        self._cpu: CpuLimiter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- asyncio API -------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"{self._scheme}://{self.host}:{self.port}"

    @property
    def _scheme(self) -> str:
        return "https" if self.tls else "http"

    async def start(self) -> None:
        """Start the servers and initialise provisioned environments."""
        self._loop = asyncio.get_running_loop()
        self._cpu = CpuLimiter(self._cpu_mode)
        if self.tls and self._tls_context is None:
            from onnx_lambda.emulator.tls import self_signed  # only with --tls

            self._tls_context, self.tls_cert = self_signed(self.host)
        shared = dict(self._env_vars.get("Parameters") or {})
        for name, spec in self.functions.items():
            overrides = {**shared, **(self._env_vars.get(name) or {})}
            config = PoolConfig(**self._pool_config, env_overrides=overrides)
            limit = spec.reserved if spec.reserved is not None else config.concurrency
            config = dataclasses.replace(config, concurrency=limit)
            self.pools[name] = FunctionPool(spec, config, self._cpu, self._log)
        invoke = invoke_handler(self.pools)
        api = api_handler(self.routes, self._invoke_alias)

        def front(request: Request) -> Awaitable[Response]:
            function = invoked_function(request)
            return api(request) if function is None else invoke(request, function)

        requested, self.port = self.port, await self._listen(front, self.port)
        for index, (name, spec) in enumerate(self.functions.items()):
            if spec.function_url:
                port = await self._listen(
                    function_url_handler(name, self._invoke_alias, spec.streaming),
                    requested + 1 + index if requested else 0)
                self.function_urls[name] = f"{self._scheme}://{self.host}:{port}"
        await asyncio.gather(*(pool.start() for pool in self.pools.values()))

    async def stop(self) -> None:
        """Stop every environment (no process is left behind) and the servers."""
        await asyncio.gather(*(pool.stop() for pool in self.pools.values()))
        for server in self._servers:
            await server.close()
        self._servers.clear()
        if self._cpu is not None:
            self._cpu.close()
        if self.tls_cert is not None:  # the self-signed pair lives as long as the servers
            shutil.rmtree(self.tls_cert.parent, ignore_errors=True)
            self.tls_cert = self._tls_context = None

    async def invoke(self, function: str, payload: bytes | Any = b"{}",
                     qualifier: str | None = None) -> InvokeResult:
        """One synchronous invocation, as the Invoke API would run it."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        target = resolve_target(self.pools, function, qualifier)
        return await target.pool.invoke(body, qualifier=target.qualifier,
                                        version=target.version)

    def records(self, function: str | None = None) -> list[InvocationRecord]:
        """Every invocation so far (of one function, or all)."""
        pools = [self.pools[function]] if function else list(self.pools.values())
        return [record for pool in pools for record in pool.records]

    def banner(self) -> str:
        lines = [f"onnx-lambda emulator on {self.url}"]
        if self.tls_cert is not None:
            lines.append(f"  TLS: self-signed certificate {self.tls_cert} (HTTP/1.1; "
                         "curl --cacert, Client(url, verify=...))")
        if self.network_delay_ms:
            lines.append(f"  network delay: {self.network_delay_ms:g} ms each way on the front "
                         "(handshakes and congestion windows not modelled)")
        for name, pool in self.pools.items():
            spec = pool.spec
            cpu, memory = pool.describe_limits()
            lines.append(
                f"  {name}: {spec.handler} memory {spec.memory_mb} MB, timeout "
                f"{spec.timeout_s:g} s, concurrency {pool.limit}, provisioned "
                f"{spec.provisioned}; CPU {cpu}; memory limit {memory}")
            if spec.processes_per_environment:
                processes = spec.processes_per_environment
                lines.append(f"    Managed Instances: {processes} processes per environment "
                             f"(AWS_LAMBDA_MAX_CONCURRENCY={processes}) sharing "
                             f"{spec.vcpus_per_environment:g} vCPU and one /tmp; up to "
                             f"{pool.limit * processes} concurrent invocations")
            lines.append(f"    invoke: POST {self.url}{PATH.format(name=name)}")
            if name in self.function_urls:
                mode = " (RESPONSE_STREAM: handler.stream_runtime)" if spec.streaming else ""
                lines.append(f"    function URL: {self.function_urls[name]}/{mode}")
        for route in self.routes:
            path = "/*" if route.path == "$default" else route.path
            lines.append(f"  {route.method:6} {self.url}{path}  -> {route.function}")
        return "\n".join(lines)

    async def _invoke_alias(self, function: str, payload: bytes,
                            on_stream: Callable[[str, BodyStream], None] | None = None,
                            ) -> InvokeResult:
        """API integrations call the function's alias when it has one."""
        pool = self.pools[function]
        return await pool.invoke(payload, qualifier=pool.spec.alias,
                                 version="1" if pool.spec.alias else "$LATEST",
                                 on_stream=on_stream)

    async def _listen(self, handler: Handler, port: int) -> int:
        # an invocation runs to its end when its client goes away, as in Lambda
        handler = delayed(handler, self.network_delay_ms)
        server = HttpServer(handler, limits=self._http_limits, refusal=refusal,
                            cancel_on_disconnect=False)
        port = await server.start(self.host, port, self._tls_context)
        self._servers.append(server)
        return port

    # -- synchronous API ---------------------------------------------------------------
    @contextmanager
    def running(self) -> Iterator[Emulator]:
        """Run the emulator in a background thread for the duration of the block."""
        loop = new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="onnx-lambda-emulator",
                                  daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result()
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(self.stop(), loop).result()
            asyncio.run_coroutine_threadsafe(_cancel_others(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` (e.g. ``emu.invoke(...)``) on the emulator's loop from another thread."""
        assert self._loop is not None, "not running"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The emulator's event loop: uvloop (libuv) roughly halves the CPU of each socket
    exchange compared with asyncio's selector loop, and a warm invocation makes three."""
    return uvloop.new_event_loop()


async def _cancel_others() -> None:
    """Cancel what is left on the loop (e.g. connections the stopped servers still hold)."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def serve_until_stopped(emulator: Emulator, ready: Callable[[], None]) -> None:
    """Run until SIGINT/SIGTERM, then stop cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await emulator.start()
        ready()
        await stop.wait()
    finally:
        await emulator.stop()
