"""The test decoders (``onnx_lambda.examples.decoder``, tiny, seed 0), exported and built once per
test run (``shared.artifact``: across tiers and xdist workers), and transformers' own greedy
tokens for them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from onnx_lambda.examples import decoder
from tests.support import shared

SEED = 0
PROMPTS = ("The cat sat on the mat.", "Why is the sky blue?", "Le chat dort 🎉")


def folder(factory: pytest.TempPathFactory, kind: str) -> Path:
    """The exported ``kind`` decoder (model.onnx and its tokenizer files), made once."""
    return shared.artifact(factory, f"decoder-{kind}",
                           lambda path: decoder.export(kind, "tiny", path, SEED))


def built(factory: pytest.TempPathFactory, kind: str) -> Path:
    """The ``kind`` decoder built as a user builds it (``onnx-lambda build-model``), made once:
    the model folder ``ONNX_LAMBDA_MODEL`` names."""
    from onnx_lambda.cli import main

    source = folder(factory, kind) / "model.onnx"

    def build(path: Path) -> None:
        assert main(["build-model", str(source), "-o", str(path)]) == 0

    return shared.artifact(factory, f"built-{kind}", build)


@cache
def torch_model(kind: str) -> object:
    return decoder.build_torch(kind, decoder.SIZES["tiny"], SEED)


def transformers_greedy(kind: str, prompt_ids: list[int], new_tokens: int) -> list[int]:
    """transformers' ``generate(do_sample=False)``: the reference every runtime must equal."""
    import torch

    model = torch_model(kind)
    ids = torch.tensor([prompt_ids])
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                             do_sample=False, eos_token_id=None,
                             pad_token_id=0)
    tokens: list[int] = out[0, len(prompt_ids):].tolist()
    return tokens


def checkpoint(factory: pytest.TempPathFactory, kind: str = "llama") -> Path:
    """The tiny ``kind`` decoder (the weights ``torch_model`` holds) saved as a Hugging Face
    checkpoint folder with its tokenizer files, made once per worker."""
    path = factory.getbasetemp() / f"checkpoint-{kind}"
    if (path / "tokenizer_config.json").exists():
        return path
    torch_model(kind).save_pretrained(path)  # type: ignore[attr-defined]
    exported = folder(factory, kind)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (path / name).write_bytes((exported / name).read_bytes())
    return path


def genai_export(factory: pytest.TempPathFactory, kind: str = "llama") -> Path:
    """The tiny ``kind`` decoder's ``checkpoint`` exported by onnxruntime-genai's own builder
    (``GroupQueryAttention``, a symbolic cache head size, ``genai_config.json``), made once."""
    import json
    import os
    import subprocess
    import sys

    path = factory.getbasetemp() / f"genai-{kind}"
    if (path / "genai_config.json").exists():
        return path
    subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                    str(checkpoint(factory, kind)), "-o", str(path), "-p", "fp32", "-e", "cpu"],
                   check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert json.loads((path / "genai_config.json").read_text())["search"][
        "past_present_share_buffer"] is True
    return path
