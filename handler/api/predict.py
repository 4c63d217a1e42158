"""Our own protocol: ``POST /predict`` (simple JSON or ``.npy``, negotiated by content type and
``Accept``) and ``GET /health``, and its error shape ``{"error": {"type", "message"},
"requestId"}``, which every path outside another protocol's family answers in (the default
family of ``handler.routes``)."""

from __future__ import annotations

# codecs.npy loads on first use (codecs.__getattr__)
from handler import codecs, tensors
from handler.codecs import simple
from handler.errors import (
    DeadlineExceededError,
    NotAcceptableError,
    NotFoundError,
    OnnxLambdaError,
    UnsupportedMediaTypeError,
)
from handler.http import JSON, NPY, OCTET, Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from handler.api.served import Served
    from handler.routes import Route
    from handler.telemetry import StageTimer

NPY_MAGIC = b"\x93NUMPY"


def error(exc: OnnxLambdaError, headers: dict[str, str], request_id: str) -> Response:
    return Response(exc.status, headers=headers, payload={
        "error": {"type": exc.type, "message": exc.message}, "requestId": request_id})


def refusal(served: Served, route: Route) -> OnnxLambdaError:
    return NotFoundError(f"{served.name!r} is a {served.pipeline.name} model: "
                              f"{route.path} needs one that can {route.needs}")


def predict(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
            context: Any) -> Response:
    kind = request.content_type
    is_npy = kind == NPY or (kind == OCTET and request.body.startswith(NPY_MAGIC))
    if not is_npy and kind not in ("", JSON, "text/plain") and not kind.endswith("+json"):
        raise UnsupportedMediaTypeError(
            f"content-type {kind!r} not supported: send {JSON} or {NPY}")
    accept = request.headers.get("accept")
    answer_npy = wants_npy(accept, default=is_npy) if accept else is_npy
    parameters: Mapping[str, Any] = {}
    pipeline = served.pipeline
    if is_npy:
        feeds = codecs.npy.decode(request, served.model)
    else:
        inputs, parameters = simple.decode(request)
        if "generate" in served.capabilities:
            return _generate(served, inputs, parameters, timer, context)
        feeds = pipeline.preprocess(inputs, parameters)
    timer.mark("decode")
    # tensors as sent run as sent; a pipeline's feeds run as it runs them (item by item, maybe)
    outputs = served.model.run(feeds) if is_npy else pipeline.run(feeds)
    timer.mark("inference")
    if answer_npy:
        encoded: Response = codecs.npy.encode(outputs, request.query)
        return encoded
    if is_npy:
        return Response(200, tensors.outputs_to_json(outputs))
    return Response(200, pipeline.postprocess(outputs, parameters, feeds))


def _generate(served: Served, inputs: Any, parameters: Mapping[str, Any], timer: StageTimer,
              context: Any) -> Response:
    """A whole generation (``handler.pipelines.generate``), stopped before the deadline;
    timed as ``generate``, which the per-inference deadline check does not read."""
    from handler.generation.deadline import Deadline  # generative models only

    timer.mark("decode")
    deadline = Deadline(context, served.settings.deadline_margin_ms)
    if not deadline.allows(0.0):
        raise DeadlineExceededError("no time left in this invocation to generate")
    answer = served.pipeline.answer(inputs, parameters, deadline)
    timer.mark("generate")
    timer.durations.update(deadline.timings)  # the generation's own (prefix-hit)
    return Response(200, answer)


def health(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
           context: Any) -> Response:
    model, state = served.model, served.state
    return Response(200, payload={
        "status": "ok", "model": model.name, "version": model.version,
        "pipeline": served.pipeline.name, "threads": model.threads,
        "graphOptimization": model.graph_optimization, "warmup": state.warmup,
        "executionProvider": model.provider.provider,
        "executionProviderReason": model.provider.reason,
        "environmentId": state.environment_id,
        "initializationType": state.initialization_type,
        "inputs": [s.describe() for s in model.inputs],
        "outputs": [s.describe() for s in model.outputs]})


def wants_npy(accept: str, *, default: bool) -> bool:
    """Content negotiation for /predict: JSON or .npy; anything else the client insists on → 406."""
    accept = accept.lower()
    if not accept or "*/*" in accept:
        return default
    if NPY in accept or "application/octet-stream" in accept:
        return NPY in accept or default
    if JSON in accept or "application/*" in accept:
        return False
    raise NotAcceptableError(f"cannot answer in {accept!r}: accept {JSON} or {NPY}")
