"""text-embeddings-inference's ``GET /info``: what the model is and the limits it takes, as
TEI's ``Info`` type names them (any model answers it)."""

from __future__ import annotations

from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.pipelines.text_inputs import TextInputs
    from handler.telemetry import StageTimer


def info(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
         context: Any) -> Response:
    pipeline: Any = served.pipeline
    model = served.model
    text: TextInputs | None = pipeline.text if "tokenize" in served.capabilities else None
    labels = model.artifact.manifest and model.artifact.manifest.labels
    if "embed" in served.capabilities:
        kind: dict[str, Any] = {"embedding": {"pooling": getattr(pipeline, "pooling", "mean")}}
    else:
        classes = getattr(pipeline, "classes", 0)  # a reranker's head: 1 or 2 logits
        labels = labels or tuple(f"LABEL_{i}" for i in range(classes))
        names = {str(i): str(label) for i, label in enumerate(labels)}
        kind = {"reranker" if classes else "classifier": {
            "id2label": names, "label2id": {v: int(k) for k, v in names.items()}}}
    batch = text.max_batch if text else 1
    requests = getattr(pipeline, "max_texts", batch)  # /rerank: its passages per request
    length = text.max_length if text else 0
    return Response(200, payload={
        "model_id": served.name, "model_sha": None, "model_dtype": model.outputs[0].dtype.name,
        "model_type": kind, "served_model_name": served.name, "max_concurrent_requests": 1,
        "max_input_length": length, "max_batch_tokens": length * batch,
        "max_batch_requests": batch, "max_client_batch_size": requests, "auto_truncate": False,
        "tokenization_workers": 1, "version": model.version, "sha": None, "docker_label": None})
