"""Example models that ``onnx-lambda build-model NAME`` can build from scratch.

Each example module exposes ``prepare(workdir, console) -> ModelSpec``: it makes the ONNX file in
``workdir`` (training or exporting it) and says how to verify it: ``digits``, ``minilm``,
``minilm_reranker``, ``tiny_chat``, ``decoder``, ``smollm2``
(a checkpoint folder); ``sentences`` and ``passages`` are their fixed inputs.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from rich.console import Console

from onnx_lambda.build_model.spec import ModelSpec

MODULES = {
    "digits": "onnx_lambda.examples.digits",
    "minilm": "onnx_lambda.examples.minilm",
    "minilm-reranker": "onnx_lambda.examples.minilm_reranker",
    "tiny-chat": "onnx_lambda.examples.tiny_chat",
}
NAMES = tuple(MODULES)


def prepare(name: str, workdir: Path, console: Console) -> ModelSpec:
    return importlib.import_module(MODULES[name]).prepare(workdir, console)
