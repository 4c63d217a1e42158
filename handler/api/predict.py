"""Answers that are not the model's: an error in its route family's shape, ``/health``, and
``/predict``'s content negotiation (kept apart from ``service``, which runs the request)."""

from __future__ import annotations

from handler import routes
from handler.errors import NotAcceptableError, OnnxLambdaError
from handler.http import JSON, NPY, Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.service import Service


def error(exc: OnnxLambdaError, request_id: str, request: Request | None) -> Response:
    """``exc`` in the shape its route's clients read: OpenAI's, TEI's, the Open Inference
    Protocol's, or ours (``{"error": {"type", "message"}, "requestId"}``)."""
    headers = {**exc.headers, "x-error-type": exc.type}
    if request is not None and routes.is_openai(request.path):
        from handler.api.openai import embeddings as openai_api  # (as in Service._dispatch)

        return openai_api.error(exc, headers)
    if request is not None and routes.is_tei(request.path):
        from handler.api.tei import embed as tei_api  # (as in Service._dispatch)

        return tei_api.error(exc, headers)
    if request is not None and routes.is_v2(request.path):
        # The Open Inference Protocol's shape: "error" is the message (Triton's and KServe's
        # clients read it as a string); our type and request id ride along as extra fields.
        return Response(exc.status, headers=headers, payload={
            "error": exc.message, "type": exc.type, "requestId": request_id})
    return Response(exc.status, headers=headers, payload={
        "error": {"type": exc.type, "message": exc.message}, "requestId": request_id})


def health(service: Service) -> dict[str, Any]:
    model = service.model
    return {"status": "ok", "model": model.name, "version": model.version,
            "pipeline": service.pipeline.name, "threads": model.threads,
            "graphOptimization": model.graph_optimization, "warmup": service.warmup_status,
            "executionProvider": model.provider.provider,
            "executionProviderReason": model.provider.reason,
            "environmentId": service.state.environment_id,
            "initializationType": service.state.initialization_type,
            "inputs": [s.describe() for s in model.inputs],
            "outputs": [s.describe() for s in model.outputs]}


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
