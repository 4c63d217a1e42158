"""Weight-only quantization of a trained decoder (SmolLM2-135M-Instruct, onnxruntime-genai's
fp32 export): int4's default for decoders (minmax blocks, the vocabulary projection in 8 bits)
passes the generation gate on prompts that chose nothing, and the artifact answers the chat
question as fp32 does.

Slow (a 135 M-parameter export, a quantization and the gate's greedy decoding)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from handler.manifest import Manifest
from onnx_lambda.build_model import decoder_build
from onnx_lambda.cli import main
from tests.support import smollm2_quant

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def chat_answer(folder: Path, question: str, tokens: int = 8) -> str:
    """Greedy answer of the artifact to ``question`` in SmolLM2's chat format."""
    from tokenizers import Tokenizer

    manifest = Manifest.load(folder)
    decoder = manifest.metadata["decoder"]
    session = ort.InferenceSession(str(folder / manifest.model),
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids = tok.encode(f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n").ids
    past = {n: np.zeros((1, decoder["kv_heads"], 0, decoder["head_dim"]), np.float32)
            for n in names if n.startswith("past_key_values.")}
    answer: list[int] = []
    step, seen = ids, 0
    for _ in range(tokens):
        seen += len(step)
        feeds = {"input_ids": np.array([step], np.int64),
                 "attention_mask": np.ones((1, seen), np.int64), **past}
        outputs = dict(zip([o.name for o in session.get_outputs()],
                           session.run(None, {k: v for k, v in feeds.items() if k in names}),
                           strict=True))
        past = {n: outputs[n.replace("past_key_values", "present")] for n in past}
        answer.append(int(outputs["logits"][0, -1].argmax()))
        step = answer[-1:]
    return tok.decode(answer)


def test_the_decoder_default_passes_the_gate_on_held_out_prompts_and_answers_paris(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    source = smollm2_quant.genai_fp32(tmp_path_factory) / "model.onnx"
    out = tmp_path / "int4"
    assert main(["build-model", str(source), "-o", str(out), "--quantize", "int4"]) == 0
    quantization = Manifest.load(out).metadata["quantization"]
    assert quantization["method"] == f"int4 {decoder_build.DECODER_ALGO}" == "int4 mixed"
    assert quantization["gate"]["token_agreement"] >= 0.9
    # the gate's prompts are not those the default was chosen on
    assert not {id(p) for p in decoder_build.GATE_PROMPTS} & {
        id(p) for p in decoder_build.CHOICE_PROMPTS}
    assert "Paris" in chat_answer(out, smollm2_quant.QUESTION)
