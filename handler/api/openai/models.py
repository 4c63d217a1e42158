"""OpenAI's model list and card: ``GET /v1/models`` and ``GET /v1/models/{model}``, which
clients read to check the name they were given (any model serves them)."""

from __future__ import annotations

from handler.api.openai.errors import ModelNotFoundError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.telemetry import StageTimer

OWNER = "onnx-lambda"


def models(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
           context: Any) -> Response:
    return Response(200, payload={"object": "list", "data": [card(served)]})


def model(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
          context: Any) -> Response:
    if params.get("model") != served.name:
        raise ModelNotFoundError(f"the model {params.get('model')!r} does not exist; this "
                                 f"function serves {served.name!r}")
    return Response(200, payload=card(served))


def card(served: Served) -> dict[str, Any]:
    manifest = served.model.artifact.manifest
    created = manifest.metadata.get("created") if manifest is not None else None
    return {"id": served.name, "object": "model",
            "created": created if isinstance(created, int) else 0, "owned_by": OWNER}
