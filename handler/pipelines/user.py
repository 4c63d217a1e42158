"""A user pipeline: ``ONNX_LAMBDA_PIPELINE=package.module`` defining

    def preprocess(inputs, parameters, model) -> dict[str, numpy.ndarray | Tensor]
    def postprocess(outputs, parameters, model, feeds) -> JSON-serialisable
    def example(model) -> inputs            # optional: the warm-up input

The module is imported once, at init; an import failure fails the init with a clear message.
A module that imports numpy gets its outputs as numpy arrays (zero-copy, read-only views of the
output buffers: ``.copy()`` one to change it in place); one that does not gets
``handler.ort.tensor.Tensor``s (``.tolist()``, ``.shape``, ``.numpy()``), and numpy is never
loaded for it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

from handler import json_codec
from handler.errors import ModelLoadError
from handler.model import Model
from handler.ort.tensor import Tensor
from handler.pipelines.tensor import TensorPipeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class UserPipeline(TensorPipeline):
    def __init__(self, module_name: str, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        try:
            self.module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = ""
            if exc.name == "numpy":  # the image and the layer ship numpy only when asked
                hint = (" (numpy is not installed: build with EXTRA_REQUIREMENTS="
                        "requirements-numpy.txt, or pip install -r layers/requirements-numpy.txt)")
            raise ModelLoadError(f"pipeline {module_name!r}: not a built-in pipeline and not "
                                 f"importable: {exc}{hint}") from exc
        missing = [f for f in ("preprocess", "postprocess") if not hasattr(self.module, f)]
        if missing:
            raise ModelLoadError(f"pipeline module {module_name!r} lacks {', '.join(missing)}")
        self.name = module_name

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
        feeds: dict[str, Any] = self.module.preprocess(inputs, parameters, self.model)
        return feeds

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Any]) -> Any:
        if "numpy" in sys.modules:  # the module works in numpy: views, no copies
            outputs = {k: v.numpy() if isinstance(v, Tensor) else v for k, v in outputs.items()}
        # any object: json, not yyjson, writes it (``json_codec.Foreign``)
        return json_codec.Foreign(self.module.postprocess(outputs, parameters, self.model, feeds))

    def example(self) -> Any:
        if hasattr(self.module, "example"):
            return self.module.example(self.model)
        return super().example()
