"""The source checkout the tooling runs from: where ``handler/``, ``template.yaml``, ``layers/``
and ``models/`` are. Benchmarks serve the repository as the function's code, so they need one;
an installed wheel has only the Python packages, and gets a clear error instead of a wrong path."""

from __future__ import annotations

from functools import cache
from pathlib import Path


class SourceTreeError(RuntimeError):
    """The tooling runs from an installed package, not from a source checkout."""


@cache
def root() -> Path:
    """The checkout's top folder (``pyproject.toml`` beside ``handler/`` and ``onnx_lambda/``)."""
    top = Path(__file__).resolve().parents[1]
    if (top / "pyproject.toml").is_file() and (top / "handler").is_dir():
        return top
    raise SourceTreeError(
        f"{top} is not an onnx-lambda source checkout (no pyproject.toml beside handler/): "
        "the benchmark lab, tune and the corpus serve the repository itself; run them from a "
        "clone (git clone, then python -m benchmarks or .venv/bin/onnx-lambda from it)")
