"""Pre/post-processing around ``session.run``, chosen by name (or a user ``package.module``).

Built-ins are imported on demand so a model only pays for the pipeline it uses: ``tensor``,
``classifier``, ``text_embedding``, ``reranker``, ``generate``; ``user`` wraps a user module,
``base`` is the contract, ``text_inputs`` and ``tokenizer_files`` serve the text pipelines.
"""

from __future__ import annotations

from handler.model import Model
from handler.pipelines.base import Pipeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BUILTIN = {
    "tensor": "handler.pipelines.tensor",
    "classifier": "handler.pipelines.classifier",
    "text-embedding": "handler.pipelines.text_embedding",
    "rerank": "handler.pipelines.reranker",
    "generate": "handler.pipelines.generate",
}


def load(name: str, model: Model, options: dict[str, Any]) -> Pipeline:
    """``name``: a built-in pipeline, or ``package.module`` defining ``preprocess``/``postprocess``
    (and optionally ``example``); the user module is wrapped by ``handler.pipelines.user``."""
    module_name = BUILTIN.get(name)
    if module_name is None:
        from handler.pipelines.user import UserPipeline

        return UserPipeline(name, model, options)
    # ``__import__`` with a fromlist returns the submodule itself: ``importlib`` (and the
    # ``warnings`` it imports) would add ~1.9 M instructions to the cold start for this one call
    pipeline: Pipeline = __import__(module_name, fromlist=("PIPELINE",)).PIPELINE(model, options)
    return pipeline


__all__ = ["BUILTIN", "Pipeline", "load"]
