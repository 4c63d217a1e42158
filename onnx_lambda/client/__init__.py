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

from onnx_lambda.client.client import Client, Result
from onnx_lambda.client.errors import ClientError, ThrottledError
from onnx_lambda.client.timing import Timing

__all__ = ["Client", "ClientError", "Result", "ThrottledError", "Timing"]
