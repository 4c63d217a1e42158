"""The real ``openai`` SDK against the emulator's HTTP API: ``chat.completions.create`` and
``completions.create``, unstreamed and streamed (an HTTP API buffers the event stream: the
SDK's stream parser reads it as it would a live one), errors as the SDK's exceptions.

The function is template.yaml's ``InferenceFunction`` as deployed: ``handler.app.handler`` on
the test decoder built by ``onnx-lambda build-model`` (``tests.support.decoders``), greedy
where the answers are compared. The live stream (a RESPONSE_STREAM Function URL) is
``test_openai_streaming``'s."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from handler.bootstrap import create
from handler.generation.params import GenerationParams
from handler.settings import Settings
from onnx_lambda.emulator import Emulator
from tests.e2e.emulator_support import OPENAI_KEY, openai_sdk, serving_with_key
from tests.support import decoders

pytestmark = pytest.mark.e2e
openai = pytest.importorskip("openai", reason="pip install 'onnx-lambda[test]'")
HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    model = decoders.built(tmp_path_factory, "llama")
    emulator = serving_with_key(model, provisioned=0)
    with emulator.running():
        yield emulator


@pytest.fixture(scope="module")
def client(served: Emulator) -> Iterator[Any]:
    with openai_sdk(served) as sdk:
        yield sdk


@pytest.fixture(scope="module")
def model(client: Any) -> str:
    [card] = client.models.list()
    return str(card.id)


def test_chat_stream_is_chunks_in_order_and_equals_the_unstreamed_answer(client: Any,
                                                                        model: str) -> None:
    whole = client.chat.completions.create(model=model, messages=HELLO, temperature=0,
                                           max_tokens=6)
    finish = whole.choices[0].finish_reason
    assert whole.object == "chat.completion" and finish in ("length", "stop")
    used = whole.usage.completion_tokens  # (a real model may end before max_tokens)
    assert used == 6 if finish == "length" else 0 < used <= 6
    with client.chat.completions.create(model=model, messages=HELLO, temperature=0,
                                        max_tokens=6, stream=True,
                                        stream_options={"include_usage": True}) as stream:
        chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    texts = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(t for t in texts if t) == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == finish
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert len({c.id for c in chunks}) == 1


def test_the_chat_answer_is_the_models_greedy_text(tmp_path_factory: pytest.TempPathFactory,
                                                  client: Any, model: str) -> None:
    """The answer is the decoder's own: the in-process pipeline's greedy tokens for the prompt
    the chat template renders."""
    whole = client.chat.completions.create(model=model, messages=HELLO, temperature=0,
                                           max_tokens=16)
    folder = decoders.built(tmp_path_factory, "llama")
    local = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(folder)})).pipeline
    prompt = local.encode(local.render_chat(HELLO))
    steps = list(local.generate(prompt, GenerationParams(max_tokens=16, temperature=0),
                                lambda: False))
    assert whole.choices[0].message.content == "".join(s.text for s in steps)
    assert whole.usage.prompt_tokens == len(prompt)
    assert whole.usage.completion_tokens == sum(len(s.token_ids) for s in steps)


def test_the_event_stream_ends_with_done(served: Emulator, model: str) -> None:
    body = json.dumps({"model": model, "messages": HELLO, "stream": True, "max_tokens": 3})
    request = urllib.request.Request(
        f"{served.url}/v1/chat/completions", body.encode(),
        {"content-type": "application/json", "authorization": f"Bearer {OPENAI_KEY}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        text = answer.read().decode()
    assert text.endswith("data: [DONE]\n\n") and text.count("[DONE]") == 1


def test_completions_unstreamed_and_streamed_agree(client: Any, model: str) -> None:
    whole = client.completions.create(model=model, prompt="once upon a time", max_tokens=4,
                                      temperature=0)
    assert whole.object == "text_completion" and 0 < whole.usage.completion_tokens <= 4
    with client.completions.create(model=model, prompt="once upon a time", max_tokens=4,
                                   temperature=0, stream=True) as stream:
        text = "".join(chunk.choices[0].text for chunk in stream)
    assert text == whole.choices[0].text


def test_sdk_exceptions_carry_our_messages(client: Any, served: Emulator, model: str) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=model, messages=HELLO, n=2)
    assert bad.value.param == "n"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=model, messages=HELLO, max_tokens=10**6)
    assert bad.value.code == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError, match="Unrecognized request argument"):
        client.chat.completions.create(model=model, messages=HELLO, extra_body={"foo": 1})
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert missing.value.code == "model_not_found"
    with (openai_sdk(served, "sk-wrong") as other,
          pytest.raises(openai.AuthenticationError)):
        other.chat.completions.create(model=model, messages=HELLO)
