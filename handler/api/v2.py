"""The Open Inference Protocol V2 (KServe / Triton) routes: server and model metadata,
readiness, liveness and ``infer`` (JSON and the binary tensor extension: the codec is
``handler.codecs.v2``), and the protocol's error shape, which Triton's and KServe's clients
read. Tensor-level: any model serves them, past its pipeline."""

from __future__ import annotations

from handler.api.predict import wants_npy
from handler.codecs import v2 as codec
from handler.errors import NotAcceptableError, NotFoundError, OnnxLambdaError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.routes import Route
    from handler.telemetry import StageTimer

SERVER = {"name": "onnx-lambda", "version": "2", "extensions": ["binary_tensor_data"]}


def error(exc: OnnxLambdaError, headers: dict[str, str], request_id: str) -> Response:
    """The protocol's shape: "error" is the message (Triton's and KServe's clients read it as a
    string); our type and request id ride along as extra fields."""
    return Response(exc.status, headers=headers, payload={
        "error": exc.message, "type": exc.type, "requestId": request_id})


def refusal(served: Served, route: Route) -> OnnxLambdaError:
    return NotFoundError(f"{served.name!r} is a {served.pipeline.name} model: {route.path} "
                         f"needs one that can {route.needs}")


def check_model(served: Served, params: dict[str, str], request: Request) -> None:
    """The path's model name is this function's (a direct invocation names none)."""
    name = params.get("name")
    if request.raw_response or name == served.name:
        return
    raise NotFoundError(f"unknown model {name!r}; this function serves {served.name!r}")


def infer(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
          context: Any) -> Response:
    check_model(served, params, request)
    if wants_npy(request.headers.get("accept", ""), default=False):
        raise NotAcceptableError("the V2 protocol answers in JSON (binary tensors on request)")
    model = served.model
    decoded = codec.decode(request, model)
    if request.raw_response:  # direct invocations carry JSON only
        decoded = codec.Decoded(decoded.feeds, decoded.id,
                                dict.fromkeys(decoded.outputs, False), False)
    timer.mark("decode")
    outputs = model.run(decoded.feeds)
    timer.mark("inference")
    response: Response = codec.encode(model, outputs, decoded)
    return response


def metadata(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
             context: Any) -> Response:
    check_model(served, params, request)
    return Response(200, payload=codec.metadata(served.model))


def model_ready(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
                context: Any) -> Response:
    check_model(served, params, request)
    return Response(200, payload={"name": served.name, "ready": True})


def server(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
           context: Any) -> Response:
    return Response(200, payload=dict(SERVER))


def ready(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
          context: Any) -> Response:
    return Response(200, payload={"ready": True})


def live(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
         context: Any) -> Response:
    return Response(200, payload={"live": True})
