"""The pipeline contract.

A pipeline turns the simple JSON request's ``inputs`` (plus optional ``parameters``) into the
session's feeds, and the session's outputs (with the feeds they came from: attention masks,
lengths) into the JSON response body. The Open Inference
Protocol V2 and ``.npy`` routes are tensor-level and bypass pipelines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from handler.model import Model
from handler.ort.tensor import Tensor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.settings import Settings


class Pipeline:
    """Base class: subclasses override ``preprocess``/``postprocess`` (and ``example``)."""

    name = "base"
    warning = ""  # something init should log once (e.g. math the model's graph lacks)
    # What the model serves, declared once at init and read by the route table (handler.routes:
    # a route whose need is missing here is refused in its protocol's shape). The names:
    # predict (/predict, V2), embed (text → vectors), rerank (query, texts → scores), generate
    # (a decode loop: /predict calls ``answer`` instead of preprocess → run → postprocess),
    # chat (generate with a chat template), tokenize (a ``text`` attribute: TextInputs).
    capabilities: frozenset[str] = frozenset({"predict"})

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        self.model = model
        self.options = dict(options)

    def configure(self, settings: Settings) -> None:
        """The environment's settings a pipeline reads itself (the generate pipeline's prefix
        cache and prompt lookup); none by default."""

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        raise NotImplementedError

    def run(self, feeds: dict[str, Any]) -> dict[str, Any]:
        """``preprocess``'s feeds → the session's outputs (the text pipelines may run a batch
        item by item: ``text_inputs``)."""
        return self.model.run(feeds)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Tensor]) -> Any:
        raise NotImplementedError

    def answer(self, inputs: Any, parameters: Mapping[str, Any],
               should_stop: Callable[[], bool]) -> Any:
        """A ``generative`` pipeline's whole answer to /predict's ``inputs``."""
        raise NotImplementedError

    def example(self) -> Any:
        """A valid ``inputs`` value for the warm-up inference when the manifest has none."""
        raise NotImplementedError
