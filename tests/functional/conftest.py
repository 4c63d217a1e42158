"""Fixtures of the functional tier built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import decoders


@pytest.fixture(scope="session", params=["llama", "gpt2"])
def decoder_dir(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight decoder (Llama- then GPT-2-style) exported to ONNX with its
    tokenizer files: a model folder the generate pipeline serves."""
    return decoders.folder(tmp_path_factory, request.param)
