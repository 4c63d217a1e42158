"""The real ``openai`` SDK and boto3 against template.yaml's streaming Function URL (Settings
Streaming StreamingUrl ``enabled``): ``StreamingFunction`` runs ``handler.app.stream_handler``
under ``handler.stream_runtime`` on the test decoder built by ``onnx-lambda build-model``,
greedy, and its chat completions stream token by token as server-sent events.

Liveness is checked by events, not by the clock: ``GatedFunction`` is the same function with
``tests/e2e/handlers/gated_chat.py`` around the real handler, which pulls no further chunk (so
generates no further token) after the first token's event until the test, holding that event,
creates a gate file. A stream buffered anywhere would never deliver it, and the gate would fail
the stream. The emulator runs one environment per function (concurrency 1), so a stream that
did not free its environment would throttle the next request.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.emulator import Emulator
from onnx_lambda.emulator.template import load_template
from tests.e2e.emulator_support import HANDLERS, lambda_client
from tests.support import cfn, decoders

# serial: a first token is told from the next by the generation's pace, which the other
# worker's load would blur
pytestmark = [pytest.mark.e2e, pytest.mark.serial]
openai = pytest.importorskip("openai", reason="pip install 'onnx-lambda[test]'")
HELLO = [{"role": "user", "content": "hello there"}]
GREEDY: dict[str, Any] = {"messages": HELLO, "temperature": 0, "max_tokens": 24}
STREAMING, GATED = "StreamingFunction", "GatedFunction"
EVENT = Path(__file__).parents[2] / "events" / "linear-function-url-predict.json"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    model = decoders.built(tmp_path_factory, "llama")
    spec = load_template(cfn.edited(tmp_path_factory.mktemp("template"),
                                    {"StreamingUrl": "enabled"}))
    streaming = spec.functions[STREAMING]
    gated = dataclasses.replace(streaming, name=GATED, handler="gated_chat.stream_handler",
                                extra_paths=(*streaming.extra_paths, HANDLERS))
    spec = dataclasses.replace(spec, functions={**spec.functions, GATED: gated})
    emulator = Emulator(spec, port=0, log=None, provisioned=0, concurrency=1,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}})
    with emulator.running():
        yield emulator


def sdk(served: Emulator, function: str) -> Any:
    return openai.OpenAI(base_url=served.function_urls[function] + "/v1", api_key="unused",
                         max_retries=0)


@pytest.fixture(scope="module")
def client(served: Emulator) -> Iterator[Any]:
    with sdk(served, STREAMING) as made:
        yield made


@pytest.fixture(scope="module")
def model(client: Any) -> str:
    [card] = client.models.list()
    return str(card.id)


def finished(served: Emulator, function: str, before: int) -> Any:
    """The record of ``function``'s invocation after its first ``before``, once it has ended
    (the client may read the last byte before the runtime has ended its stream)."""
    deadline = time.monotonic() + 20
    while len(served.records(function)) <= before and time.monotonic() < deadline:
        time.sleep(0.005)
    return served.records(function)[before]


def content(chunks: list[Any]) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


@pytest.fixture(scope="module")
def whole(client: Any, model: str) -> Any:
    """The unstreamed answer to GREEDY, from the same function."""
    answer = client.chat.completions.create(model=model, **GREEDY)
    assert answer.choices[0].finish_reason == "length"  # (random weights: no EOS in 24)
    assert answer.usage.completion_tokens == 24
    return answer


def test_sdk_stream_is_the_tokens_in_order_then_done_and_equals_the_unstreamed_answer(
        served: Emulator, client: Any, model: str, whole: Any) -> None:
    before = len(served.records(STREAMING))
    raw = client.chat.completions.with_raw_response.create(model=model, stream=True, **GREEDY)
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.headers["transfer-encoding"] == "chunked"  # streamed, not one sized body
    with raw.parse() as stream:
        chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    texts = content(chunks)
    assert len(texts) > 1 and "".join(texts) == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks][-1] == "length"
    assert len({c.id for c in chunks}) == 1
    # complete, though the SDK closes its connection at [DONE], before the stream's end
    assert finished(served, STREAMING, before).error_type is None


def test_the_first_token_reaches_the_client_before_the_next_is_generated(
        served: Emulator, model: str, whole: Any, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    before = len(served.records(GATED))
    with sdk(served, GATED) as gated, gated.chat.completions.create(
            model=model, stream=True, extra_headers={"x-gate": str(gate)}, **GREEDY) as stream:
        chunks = iter(stream)
        held = [next(chunks)]
        while not content(held):
            held.append(next(chunks))
        assert not gate.exists()
        gate.touch()  # only now may the function generate the second token
        rest = list(chunks)
    assert "".join(content(held + rest)) == whole.choices[0].message.content
    assert finished(served, GATED, before).error_type is None


def test_a_client_that_leaves_mid_stream_frees_the_environment(
        served: Emulator, model: str, whole: Any, tmp_path: Path) -> None:
    gate, marker = tmp_path / "gate", tmp_path / "closed"
    before = len(served.records(GATED))
    with sdk(served, GATED) as gated:
        stream = gated.chat.completions.create(
            model=model, stream=True, extra_headers={"x-gate": str(gate), "x-marker": str(marker)},
            **{**GREEDY, "max_tokens": 200})
        chunks = iter(stream)
        while not content([next(chunks)]):
            pass
        stream.close()  # mid-generation: the function is held at the gate
        gate.touch()
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        abandoned = finished(served, GATED, before)
        # the handler's chunks were closed (the generation with them) in the invocation left
        assert marker.read_text() == f"closed {abandoned.request_id}"
        assert abandoned.error_type == "Runtime.TruncatedResponse"
        answer = gated.chat.completions.create(model=model, **GREEDY)  # the one environment
    assert answer.choices[0].message.content == whole.choices[0].message.content
    served_next = finished(served, GATED, before + 1)
    assert served_next.environment_id == abandoned.environment_id
    assert served_next.error_type is None


def function_url_event(body: dict[str, Any]) -> bytes:
    """What a Function URL hands the function for ``POST /v1/chat/completions`` (the shape of
    ``sam local generate-event``'s Function URL event): the Invoke API's payload for it."""
    event = json.loads(EVENT.read_text())
    event.update(rawPath="/v1/chat/completions", rawQueryString="", cookies=[],
                 headers={"content-type": "application/json"}, isBase64Encoded=True,
                 body=base64.b64encode(json.dumps(body).encode()).decode())
    del event["queryStringParameters"]
    event["requestContext"]["http"].update(method="POST", path="/v1/chat/completions")
    return json.dumps(event).encode()


def test_invoke_with_response_stream_reads_the_same_tokens(
        served: Emulator, client: Any, model: str, whole: Any) -> None:
    """The Invoke API streams what the URL streams: the HTTP integration response (a JSON
    prelude, eight NUL bytes) whose body is the event stream, the same deltas in order."""
    with client.chat.completions.create(model=model, stream=True, **GREEDY) as stream:
        deltas = content(list(stream))
    answer = lambda_client(served.url).invoke_with_response_stream(
        FunctionName=STREAMING, Qualifier="live",
        Payload=function_url_event({"model": model, "stream": True, **GREEDY}))
    assert answer["ResponseStreamContentType"] == (
        "application/vnd.awslambda.http-integration-response")
    events = list(answer["EventStream"])
    assert "ErrorCode" not in events[-1]["InvokeComplete"]
    payloads = [e["PayloadChunk"]["Payload"] for e in events[:-1]]
    head, body = b"".join(payloads).split(b"\0" * 8, 1)
    prelude = json.loads(head)
    assert prelude["statusCode"] == 200
    assert prelude["headers"]["content-type"].startswith("text/event-stream")
    assert body.endswith(b"data: [DONE]\n\n") and body.count(b"[DONE]") == 1
    data = [json.loads(line[6:]) for line in body.decode().split("\n\n")
            if line.startswith("data: {")]
    texts = [d["choices"][0]["delta"].get("content") for d in data if d["choices"]]
    assert [t for t in texts if t] == deltas
    assert "".join(deltas) == whole.choices[0].message.content
