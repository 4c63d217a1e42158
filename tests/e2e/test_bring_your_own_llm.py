"""A user's language model in, a right answer out: SmolLM2-135M-Instruct (trained) handed to
``onnx-lambda build-model`` as the folder each route leaves (its Hugging Face checkpoint; the
onnxruntime-genai builder's fp32 and int4 exports; an optimum-style export), built with
defaults, served as template.yaml's InferenceFunction and asked through the real ``openai`` SDK.

Greedy answers equal transformers' on the checkpoint (the int4 export: onnxruntime-genai's own
runtime on the same graph, whose kernels ours runs; its distance to transformers is the gate's
business, not this test's). Streamed equals whole. The manifest names the exporter and the
artifact holds one copy of the weights.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.emulator_support import openai_sdk, serving_with_key
from tests.support import smollm2

# slow: SmolLM2 (135 M) exported and built once per route; its builds run the decoder gate
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]
openai = pytest.importorskip("openai", reason="pip install 'onnx-lambda[test]'")
pytest.importorskip("onnxruntime_genai", reason="pip install 'onnx-lambda[build-llm]'")
pytest.importorskip("transformers", reason="pip install 'onnx-lambda[build-llm]'")
EXPORTERS = {"checkpoint": "onnxruntime-genai", "genai-fp32": "onnxruntime-genai",
             "genai-int4": "onnxruntime-genai", "optimum": "optimum-layout"}


@pytest.fixture(scope="module", params=smollm2.ROUTES)
def route(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory, route: str) -> Path:
    return smollm2.built(tmp_path_factory, route)


@pytest.fixture(scope="module")
def client(artifact: Path) -> Iterator[Any]:
    # two vCPUs' memory size, and room for a 135 M-parameter fp32 model's init and answers on a
    # shared CI machine (the template's 10 s is for the tiny models)
    emulator = serving_with_key(artifact, provisioned=0, memory_mb=3538, timeout_s=300,
                                init_timeout_s=300)
    with emulator.running(), openai_sdk(emulator) as sdk:
        yield sdk


@pytest.fixture(scope="module")
def model(client: Any) -> str:
    [card] = client.models.list()
    return str(card.id)


def _expected(factory: pytest.TempPathFactory, route: str) -> tuple[str, ...]:
    if route == "genai-int4":
        return _genai_answers(smollm2.export(factory, route), smollm2.checkpoint(factory))
    return smollm2.transformers_answers(smollm2.checkpoint(factory))


def _genai_answers(export: Path, checkpoint: Path) -> tuple[str, ...]:
    """onnxruntime-genai's greedy answers on its own export (the same prompt ids)."""
    import onnxruntime_genai as og
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    model = og.Model(str(export))
    answers = []
    for question in smollm2.QUESTIONS:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                            add_generation_prompt=True, return_dict=True
                                            )["input_ids"]
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(ids) + smollm2.TOKENS, do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(ids)
        while not generator.is_done():
            generator.generate_next_token()
        tokens = list(generator.get_sequence(0))[len(ids):]
        answers.append(tokenizer.decode(tokens, skip_special_tokens=True))
    return tuple(answers)


def test_greedy_chat_answers_equal_the_reference(tmp_path_factory: pytest.TempPathFactory,
                                                 route: str, client: Any, model: str
                                                 ) -> None:
    want = _expected(tmp_path_factory, route)
    got = tuple(
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": q}], temperature=0,
            max_tokens=smollm2.TOKENS).choices[0].message.content
        for q in smollm2.QUESTIONS)
    assert got == want
    if route != "genai-int4":
        assert got[0].startswith("The capital of France is Paris")


def test_the_stream_equals_the_whole_answer(client: Any, model: str) -> None:
    question = [{"role": "user", "content": smollm2.QUESTIONS[0]}]
    whole = client.chat.completions.create(model=model, messages=question, temperature=0,
                                           max_tokens=smollm2.TOKENS)
    with client.chat.completions.create(model=model, messages=question, temperature=0,
                                        max_tokens=smollm2.TOKENS, stream=True) as stream:
        parts = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(parts) == whole.choices[0].message.content


def test_the_manifest_names_the_exporter_and_the_weights_ship_once(route: str,
                                                                   artifact: Path) -> None:
    manifest = json.loads((artifact / "model.json").read_text())
    assert manifest["metadata"]["exporter"]["name"] == EXPORTERS[route]
    models = [p for p in artifact.iterdir() if p.name.startswith("model.")
              and p.suffix in (".onnx", ".ort", ".data")]
    assert [p.name for p in models if p.suffix != ".data"] == [manifest["model"]]
    if route.startswith("genai") or route == "checkpoint":  # the symbolic head size, recorded
        assert manifest["pipeline_options"]["head_dim"] == 64
    assert (artifact / "chat_template.jinja").is_file()
    assert 2 in manifest["pipeline_options"]["eos_token_ids"]  # <|im_end|>


def test_an_export_without_position_ids_matches_transformers(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """optimum's layout without ``position_ids`` (the positions follow from the mask): the
    export the build's check accepts, within its tolerance of transformers. TorchScript's, what
    a build without onnxruntime-genai tries first (the dynamo fallback: test_llm_export.py)."""
    from onnx_lambda.build_model.llm_export import TOLERANCE, check, torch_export

    checkpoint = smollm2.checkpoint(tmp_path_factory)
    torch_export(checkpoint, tmp_path, position_ids=False, dynamo=False)
    import onnx

    inputs = [i.name for i in onnx.load(str(tmp_path / "model.onnx"),
                                        load_external_data=False).graph.input]
    assert inputs[:2] == ["input_ids", "attention_mask"] and "position_ids" not in inputs
    worst, scale = check(checkpoint, tmp_path / "model.onnx")
    assert worst <= TOLERANCE * scale
