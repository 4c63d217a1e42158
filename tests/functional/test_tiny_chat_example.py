"""``build-model tiny-chat``: the toy decoder built with no download and no torch. What the
reader of docs/how-to/generate.md relies on: it builds as a generate artifact with a chat
template, its prefill and its steps agree (the cache is right), and the chat and completions
routes answer it (text of word pieces, not stray bytes; greedy is repeatable)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from onnx_lambda.cli import main
from onnx_lambda.examples import tiny_chat
from onnx_lambda.lambda_context import LambdaContext as Context
from tests.functional.test_handler_errors import http_event


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-chat") / "tiny-chat"
    assert main(["build-model", "tiny-chat", "-o", str(folder)]) == 0
    return folder


def test_it_builds_as_a_decoder_with_a_chat_template(built: Path) -> None:
    manifest = json.loads((built / "model.json").read_text())
    assert manifest["pipeline"] == "generate"
    decoder = manifest["metadata"]["decoder"]
    assert decoder["layers"] == 1 and decoder["chat_template"] is True
    assert decoder["eos_token_ids"] == [2]
    assert manifest["metadata"]["build"]["accuracy"]["token_agreement"] == 1.0


def test_a_prefill_and_steps_give_the_same_last_logits(tmp_path: Path) -> None:
    session = ort.InferenceSession(str(tiny_chat.write(tmp_path)))
    ids = [1, 40, 77, 123, 300]
    empty = np.zeros((1, 1, 0, tiny_chat.HIDDEN + 1), np.float32)

    def run(new: list[int], key: np.ndarray, value: np.ndarray, total: int) -> list[Any]:
        return session.run(None, {"input_ids": np.array([new]),
                                  "attention_mask": np.ones((1, total), np.int64),
                                  "past_key_values.0.key": key,
                                  "past_key_values.0.value": value})

    whole = run(ids, empty, empty, len(ids))[0][0, -1]
    key = value = empty
    for count, token in enumerate(ids, 1):
        logits, key, value = run([token], key, value, count)
    np.testing.assert_allclose(logits[0, -1], whole, rtol=1e-5, atol=1e-5)


def call(service: Any, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    result = service(http_event("POST", path, json.dumps(body), None), Context("req-1"))
    return result["statusCode"], json.loads(result["body"])


def test_chat_and_completions_answer_words(built: Path,
                                           make_service: Callable[..., Any]) -> None:
    service = make_service(built)
    chat = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hello!"}],
            "max_tokens": 24, "temperature": 0}
    status, first = call(service, "/v1/chat/completions", chat)
    assert status == 200, first
    text = first["choices"][0]["message"]["content"]
    assert first["usage"]["completion_tokens"] == 24 and len(text) > 24
    assert text.isprintable() and "\ufffd" not in text  # word pieces, not stray bytes
    assert call(service, "/v1/chat/completions", chat)[1]["choices"][0]["message"][
        "content"] == text
    status, completion = call(service, "/v1/completions", {
        "model": "tiny-chat", "prompt": "Once upon a time", "max_tokens": 8, "seed": 3})
    assert status == 200 and completion["choices"][0]["text"]
