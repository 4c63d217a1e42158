"""A Docker-free local Lambda + API Gateway (``onnx-lambda serve`` / ``onnx-lambda invoke``).

Each execution environment is a child process running the real AWS runtime client
(``python -m awslambdaric HANDLER``) against its own Lambda Runtime API endpoint, with the
environment variables Lambda sets, the CPU share its memory buys (cgroup CFS quota, else
core pinning) and its memory size enforced. Environments are pooled per function like
Lambda does (warm reuse, cold starts up to the concurrency limit, throttling beyond it,
provisioned concurrency, idle reaping) and every invocation yields an
:class:`~onnx_lambda.emulator.report.InvocationRecord` (init duration, duration, billed
duration, max memory used, cold/warm) printed as Lambda's ``REPORT`` line.

Modules (docs/explanation/architecture.md has each one's job): ``server`` (``Emulator``),
``template`` + ``intrinsics``, ``http11`` + ``http_conn`` + ``http_stream`` + ``http_types``
(the HTTP server), ``http_front`` + ``apigw`` (API Gateway and Function URLs),
``invoke_api``, ``response_stream`` (streamed invocations), ``pool``, ``environment`` +
``runtime_launch`` + ``limits``, ``runtime_api``, ``report`` + ``ids``, ``tls``,
``network_delay``; ``commands``
is the CLI.

Programmatic use (what ``tune`` and the benchmark lab build on)::

    from onnx_lambda.emulator import Emulator

    emu = Emulator("template.yaml", port=0, log=None)      # port 0: any free port
    with emu.running():                                     # event loop in a thread
        result = emu.call(emu.invoke("InferenceFunction", {"warmer": True}))
        result.payload, result.error_type                   # bytes, None | "Runtime.ExitError"...
        result.record.cold, result.record.init_ms, result.record.duration_ms
        emu.url                                             # HTTP front + Invoke API
    emu.records()                                           # every InvocationRecord

or from asyncio: ``await emu.start()``, ``await emu.invoke(...)``, ``await emu.stop()``.
To run it as a separate process, start ``onnx-lambda serve --port 0`` and read the
``READY http://HOST:PORT`` line it prints on stdout
(:func:`onnx_lambda.server_process.start_server_process` does both).

Modules: ``template`` / ``intrinsics`` (read a SAM template), ``http11`` / ``http_conn`` /
``http_types`` (the HTTP/1.1 server every socket uses, one connection with its limits, the
request and response records), ``runtime_api`` (the Runtime API), ``ids`` (request and trace
ids), ``environment`` (one child process), ``limits`` (CPU share, memory, AWS's service
quotas), ``pool``
(scheduling), ``apigw`` (API Gateway events and response mapping), ``http_front`` (routes,
Function URLs), ``invoke_api`` (Lambda's Invoke API), ``report`` (records, REPORT lines),
``server`` (:class:`Emulator`), ``commands`` (CLI).
"""

from __future__ import annotations

import importlib
from typing import Any

# Lazy: ``onnx-lambda --help`` imports this package (for ``commands``) and must stay instant.
_EXPORTS = {
    "Emulator": "server",
    "InvocationRecord": "report",
    "InvokeResult": "pool",
    "Throttled": "pool",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
