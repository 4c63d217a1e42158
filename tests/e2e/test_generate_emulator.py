"""A built decoder behind the project's ``template.yaml`` in the emulator (awslambdaric, a real
execution-environment process): ``/predict`` generates, greedy text equals the in-process
pipeline's, bad parameters are 400s, and the environment keeps serving."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handler.bootstrap import create
from handler.generation.params import GenerationParams
from handler.settings import Settings
from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.e2e.emulator_support import call
from tests.support import decoders

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return decoders.built(tmp_path_factory, "llama")


@pytest.fixture(scope="module")
def served(built: Path) -> Iterator[Emulator]:
    emulator = Emulator(root() / "template.yaml", port=0, log=None,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(built)}})
    with emulator.running():
        yield emulator


def predict(served: Emulator, body: object) -> tuple[int, dict[str, Any]]:
    status, _, raw = call(served.url + "/predict", "POST", json.dumps(body).encode(),
                          {"Content-Type": "application/json"})
    return status, json.loads(raw)


def test_greedy_generation_through_the_http_api(served: Emulator, built: Path) -> None:
    prompt = "The cat sat on the mat."
    status, body = predict(served, {"inputs": prompt,
                                    "parameters": {"temperature": 0, "max_tokens": 24}})
    assert status == 200, body
    local = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(built)})).pipeline
    steps = list(local.generate(local.encode(prompt),
                                GenerationParams(max_tokens=24, temperature=0), lambda: False))
    assert body["generated_text"] == "".join(s.text for s in steps)
    assert body["finish_reason"] == steps[-1].finish_reason == "length"


def test_bad_parameters_are_400_and_the_environment_serves_on(served: Emulator) -> None:
    status, body = predict(served, {"inputs": "Hi", "parameters": {"temperature": -1}})
    assert status == 400 and "temperature" in json.dumps(body)
    status, body = predict(served, {"inputs": "Hi", "parameters": {"max_tokens": 2}})
    assert status == 200 and body["usage"]["completion_tokens"] == 2
