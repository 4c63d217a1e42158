"""Default pipeline: named tensors in, named tensors out, validated against the signature.

Request ``{"inputs": {"x": [[...]]}}`` (or ``{"inputs": [[...]]}`` for a single-input model);
response ``{"outputs": {"y": [[...]]}}``. ``parameters.outputs`` may list the outputs wanted.
"""

from __future__ import annotations

from collections.abc import Mapping

from handler import tensors
from handler.errors import InvalidInputError
from handler.model import TensorSpec
from handler.ort.tensor import Tensor, zeros
from handler.pipelines.base import Pipeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class TensorPipeline(Pipeline):
    name = "tensor"

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        return tensors.from_json(inputs, self.model.inputs)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Tensor]) -> Any:
        wanted = parameters.get("outputs")
        if wanted is not None:
            if not isinstance(wanted, list) or any(
                    not isinstance(name, str) or name not in outputs for name in wanted):
                raise InvalidInputError(f"parameters.outputs must list some of {list(outputs)}")
            outputs = {name: outputs[name] for name in wanted}
        return tensors.outputs_to_json(outputs)

    def example(self) -> Any:
        return {spec.name: synthetic(spec).tolist() for spec in self.model.inputs}


def synthetic(spec: TensorSpec) -> Tensor:
    """A zero tensor with every dynamic dimension set to 1 (strings: empty)."""
    return zeros(spec.element, tuple(d if isinstance(d, int) and d > 0 else 1 for d in spec.shape))


PIPELINE = TensorPipeline
