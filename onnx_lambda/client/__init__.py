"""The Python client of an onnx-lambda endpoint, and ``onnx-lambda probe``: the caller's side of
a request (connect, write, wait, read, the network leg) beside the server's stages.

    from onnx_lambda.client import Client
    with Client("https://abc.execute-api.eu-west-1.amazonaws.com", auth="iam") as client:
        result = client.infer({"x": array})
        result.outputs["y"], result.timing.network, result.timing.server["inference"]

Modules: ``client`` (Client, retries), ``wire`` (V2 JSON / binary tensors, .npy), ``timing``
(trace events, Server-Timing), ``auth`` (SigV4, bearer), ``errors``, ``probe`` and
``probe_report`` (the command), ``commands`` (its CLI).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onnx_lambda.client.client import Client, Result
    from onnx_lambda.client.errors import ClientError, ThrottledError
    from onnx_lambda.client.timing import Timing

__all__ = ["Client", "ClientError", "Result", "ThrottledError", "Timing"]
# loaded on first use: ``onnx-lambda probe``'s registration imports this package, and the
# client's httpx comes with the 'client' extra (the CLI must start without it)
_HOMES = {"Client": "client", "Result": "client", "ClientError": "errors",
          "ThrottledError": "errors", "Timing": "timing"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _HOMES[name] == "client":  # the Python API's check (the CLI's is in onnx_lambda.cli)
        from onnx_lambda import extras

        extras.require("client", "client", ("httpx", "h2"), who="onnx_lambda.client.Client")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
