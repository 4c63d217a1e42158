"""OpenAI's ``/v1/chat/completions`` and ``/v1/completions`` (``handler.api.openai.chat``) through
the real ``Service`` over a stand-in generator (``tests.support.stand_in_generator``: a fake,
at the unit tier only): answers and streamed chunks that the ``openai`` SDK's own models parse,
streaming buffered and live, the deadline, telemetry, and every bad request as a 400 in
OpenAI's error shape. The ``service`` fixture is the one place that names the stand-in."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from handler.errors import InvalidInputError
from handler.service import Service
from handler.settings import Settings
from handler.telemetry import Telemetry
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support.stand_in_generator import WORDS, StandInGenerator

openai_types = pytest.importorskip("openai.types", reason="pip install 'onnx-lambda[test]'")
from openai.types import Completion  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

MODEL = "tiny-gen"
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
HELLO = [{"role": "user", "content": "hello there"}]
EIGHT = "".join(f" {w}" for w in WORDS[:8])  # the stand-in's answer up to its EOS


def make(generator: Any, **env: str) -> Service:
    settings = Settings.from_env({f"ONNX_LAMBDA_{k.upper()}": v for k, v in env.items()})
    telemetry = Telemetry(namespace="T", function_name="f", metrics=True, level="info",
                          stream=io.StringIO())
    return Service(settings, SimpleNamespace(name=MODEL), generator, telemetry, {})


@pytest.fixture
def generator() -> StandInGenerator:
    return StandInGenerator(context_length=64, eos_after=8)


@pytest.fixture
def service(generator: StandInGenerator) -> Service:
    return make(generator)


def call(service: Service, path: str, body: Any, remaining_ms: int = 30_000,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    raw = body if isinstance(body, str) else json.dumps(body)
    result = service(http_event("POST", path, raw, headers), Context("req-1", remaining_ms))
    return result["statusCode"], result["headers"], result["body"]


def chat(service: Service, **fields: Any) -> tuple[int, dict[str, str], str]:
    return call(service, CHAT, {"model": MODEL, "messages": HELLO, **fields})


def events(text: str) -> list[str]:
    """The ``data:`` payloads of an event stream, checking its framing."""
    assert text.endswith("\n\n")
    blocks = text[:-2].split("\n\n")
    assert all(block.startswith("data: ") and "\n" not in block for block in blocks)
    return [block[len("data: "):] for block in blocks]


def chunks(text: str) -> list[dict[str, Any]]:
    data = events(text)
    assert data[-1] == "[DONE]" and "[DONE]" not in data[:-1]
    return [json.loads(item) for item in data[:-1]]


def test_chat_answer_parses_as_the_sdks_chat_completion(service: Service,
                                                        generator: StandInGenerator) -> None:
    status, headers, body = chat(service, temperature=0.5, top_p=0.9, seed=7, max_tokens=20,
                                 repetition_penalty=1.2, stop=["never"], user="u1")
    assert status == 200 and headers["content-type"] == "application/json"
    answer = ChatCompletion.model_validate(json.loads(body))
    assert answer.object == "chat.completion" and answer.model == MODEL
    assert answer.id == "chatcmpl-req-1" and answer.created > 1_700_000_000
    [choice] = answer.choices
    assert (choice.index, choice.message.role, choice.finish_reason) == (0, "assistant", "stop")
    assert choice.message.content == EIGHT
    prompt_ids, params = generator.calls[0]
    assert prompt_ids == generator.encode("<user> hello there\n<assistant>")
    assert params == (20, 0.5, 0.9, 0, 7, 1.2, ("never",))
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens,
            answer.usage.total_tokens) == (len(prompt_ids), 9, len(prompt_ids) + 9)
    assert generator.open == 0


def test_chat_stream_is_the_sdks_chunks_in_order_then_done(service: Service) -> None:
    whole = json.loads(chat(service)[2])["choices"][0]["message"]["content"]
    status, headers, body = chat(service, stream=True)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    parsed = [ChatCompletionChunk.model_validate(c) for c in chunks(body)]
    assert parsed[0].choices[0].delta.role == "assistant"
    assert parsed[0].choices[0].delta.content == ""
    texts = [p.choices[0].delta.content for p in parsed[1:-1]]
    assert texts == [f" {w}" for w in WORDS[:8]] and "".join(texts) == whole
    assert parsed[-1].choices[0].finish_reason == "stop"
    assert [p.choices[0].finish_reason for p in parsed[:-1]] == [None] * (len(parsed) - 1)
    assert {p.id for p in parsed} == {"chatcmpl-req-1"}
    assert all(p.usage is None and "usage" not in c for p, c in zip(parsed, chunks(body),
                                                                 strict=True))


def test_include_usage_adds_a_last_chunk_with_usage_and_no_choices(service: Service) -> None:
    body = chat(service, stream=True, stream_options={"include_usage": True})[2]
    raw = chunks(body)
    assert all(c["usage"] is None for c in raw[:-1])
    last = ChatCompletionChunk.model_validate(raw[-1])
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens == 9
    assert last.usage.total_tokens == last.usage.prompt_tokens + 9


def test_completions_answer_and_stream_parse_as_the_sdks_completion(service: Service) -> None:
    status, _, body = call(service, COMPLETIONS, {"model": MODEL, "prompt": "once upon",
                                                  "max_tokens": 3})
    answer = Completion.model_validate(json.loads(body))
    assert status == 200 and answer.object == "text_completion"
    assert answer.id == "cmpl-req-1"
    assert answer.choices[0].text == " alpha beta gamma"
    assert answer.choices[0].finish_reason == "length"
    assert answer.usage is not None and answer.usage.completion_tokens == 3
    body = call(service, COMPLETIONS, {"model": MODEL, "prompt": ["once upon"],
                                       "max_tokens": 3, "stream": True})[2]
    raw = chunks(body)
    # the SDK reads each chunk as a Completion without validating it (its type insists on a
    # finish reason, which OpenAI's own stream sends as null until the last chunk)
    Completion.model_validate(raw[-1])
    assert all(Completion.model_validate({**c, "choices": [{**c["choices"][0],
                                                            "finish_reason": "stop"}]})
               for c in raw[:-1])
    assert "".join(c["choices"][0]["text"] for c in raw) == " alpha beta gamma"
    assert [c["choices"][0]["finish_reason"] for c in raw] == [None, None, None, "length"]


def test_a_stop_sequence_is_cut_and_never_streamed_in_part(service: Service) -> None:
    answer = json.loads(chat(service, stop=" gamma")[2])
    assert answer["choices"][0]["message"]["content"] == " alpha beta"
    assert answer["choices"][0]["finish_reason"] == "stop"
    streamed = chunks(chat(service, stream=True, stop=[" gam", "zzz"])[2])
    texts = [c["choices"][0]["delta"].get("content") for c in streamed[1:]]
    assert "".join(t for t in texts if t) == " alpha beta"


def test_max_completion_tokens_is_the_newer_name_of_max_tokens(service: Service) -> None:
    answer = json.loads(chat(service, max_completion_tokens=2)[2])
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["usage"]["completion_tokens"] == 2


LONG = " ".join(["word"] * 70)  # over the stand-in's 64-token context


@pytest.mark.parametrize(("path", "fields", "param", "says"), [
    (COMPLETIONS, {"prompt": ""}, "prompt", "empty"),
    (COMPLETIONS, {"prompt": "   "}, "prompt", "empty"),  # no token: the pipeline's refusal
    (COMPLETIONS, {"prompt": LONG}, "prompt", "context"),
    (COMPLETIONS, {"prompt": ["a", "b"]}, "prompt", "one per request"),
    (COMPLETIONS, {"prompt": [1, 2, 3]}, "prompt", "token ids"),
    (COMPLETIONS, {"prompt": "hi", "echo": True}, "echo", "not supported"),
    (COMPLETIONS, {"prompt": "hi", "best_of": 3}, "best_of", "not supported"),
    (CHAT, {"messages": []}, "messages", "non-empty"),
    (CHAT, {"messages": [{"role": "user", "content": LONG}]}, "messages", "context"),
    (CHAT, {"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role", "tools"),
    (CHAT, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
     "messages[0].content", "text parts"),
    (CHAT, {"messages": [{"role": "user", "content": 3}]}, "messages[0].content", "string"),
    (CHAT, {"messages": [{"role": "user", "content": "x", "tool_calls": []}]},
     "messages[0].tool_calls", "does not support"),
    (CHAT, {"messages": [{"role": "assistant", "content": "x"}]}, "messages", "last message"),
    (CHAT, {"max_tokens": 0}, "max_tokens", "positive"),
    (CHAT, {"max_tokens": 10**6}, "max_tokens", "context"),
    (CHAT, {"max_completion_tokens": 60}, "max_completion_tokens", "context"),
    (CHAT, {"max_tokens": 2, "max_completion_tokens": 3}, "max_tokens", "not both"),
    (CHAT, {"max_tokens": 2.5}, "max_tokens", "positive"),
    (CHAT, {"temperature": -1}, "temperature", "at least 0 and at most 2"),
    (CHAT, {"temperature": "hot"}, "temperature", "number"),
    (CHAT, {"top_p": 1.5}, "top_p", "at most 1"),
    (CHAT, {"top_k": -2}, "top_k", "from -1"),
    (CHAT, {"seed": 2**64}, "seed", "from -9223372036854775808"),
    (CHAT, {"repetition_penalty": 0}, "repetition_penalty", "above 0"),
    (CHAT, {"frequency_penalty": 0.5}, "frequency_penalty", "repetition_penalty"),
    (CHAT, {"presence_penalty": 3}, "presence_penalty", "at most 2"),
    (CHAT, {"n": 2}, "n", "one choice"),
    (CHAT, {"stop": ["a", "b", "c", "d", "e"]}, "stop", "at most 4"),
    (CHAT, {"stop": [""]}, "stop", "non-empty"),
    (CHAT, {"stream": "yes"}, "stream", "true or false"),
    (CHAT, {"stream_options": {"include_usage": True}}, "stream_options", "only allowed"),
    (CHAT, {"stream": True, "stream_options": {"x": 1}}, "stream_options", "Unrecognized"),
    (CHAT, {"logprobs": True}, "logprobs", "not supported"),
    (CHAT, {"logit_bias": {"5": 10}}, "logit_bias", "not supported"),
    (CHAT, {"tools": [{"type": "function"}]}, "tools", "not supported"),
    (CHAT, {"response_format": {"type": "json_object"}}, "response_format", "not supported"),
    (CHAT, {"user": 5}, "user", "string"),
    (CHAT, {"best_of": 2}, "best_of", "Unrecognized"),  # a completions field, not a chat one
    (CHAT, {"foo": 1, "bar": 2}, "bar", "Unrecognized request argument supplied: bar, foo"),
    (CHAT, {"model": 5}, "model", "must be a string"),
])
def test_bad_requests_are_400_in_openais_shape(service: Service, generator: StandInGenerator,
                                               path: str, fields: dict[str, Any], param: str,
                                               says: str) -> None:
    body = {"model": MODEL, **({"messages": HELLO} if path == CHAT else {}), **fields}
    status, headers, text = call(service, path, body)
    error = json.loads(text)["error"]
    assert status == 400, error
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert says in error["message"]
    assert headers["x-request-id"] == "req-1" and generator.open == 0


@pytest.mark.parametrize("body", ["[1, 2]", "{not json", ""])
def test_a_body_that_is_not_a_json_object_is_400(service: Service, body: str) -> None:
    status, _, text = call(service, CHAT, body)
    assert status == 400 and json.loads(text)["error"]["type"] == "invalid_request_error"


def test_neutral_values_of_unsupported_fields_are_accepted(service: Service) -> None:
    status, _, _ = chat(service, n=1, logprobs=False, tools=[], response_format={"type": "text"},
                        frequency_penalty=0, presence_penalty=0.0, stream=False,
                        parallel_tool_calls=True, metadata={"a": "b"}, service_tier="auto")
    assert status == 200


def test_text_parts_and_roles_reach_the_chat_template(service: Service,
                                                      generator: StandInGenerator) -> None:
    messages = [{"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "a"},
                                             {"type": "text", "text": "b"}], "name": "ann"}]
    assert call(service, CHAT, {"model": MODEL, "messages": messages})[0] == 200
    rendered = "<system> be brief\n<user> a\nb\n<assistant>"  # developer: system
    assert generator.calls[0][0] == generator.encode(rendered)


def test_top_p_zero_is_greedy_and_top_k_minus_one_is_off(service: Service,
                                                          generator: StandInGenerator) -> None:
    assert chat(service, top_p=0, temperature=0.7, top_k=-1)[0] == 200
    assert generator.calls[0][1][1:4] == (0.0, 1.0, 0)


def test_another_model_name_is_404_model_not_found(service: Service) -> None:
    status, _, text = call(service, CHAT, {"model": "gpt-4o", "messages": HELLO})
    error = json.loads(text)["error"]
    assert status == 404 and error["code"] == "model_not_found" and MODEL in error["message"]


@pytest.mark.parametrize("path", [CHAT, COMPLETIONS])
def test_a_model_that_does_not_generate_is_404_as_openai_answers(path: str) -> None:
    service = make(SimpleNamespace(name="classifier", capabilities=frozenset({"predict"})))
    body = {"model": MODEL, "messages": HELLO, "prompt": "x"}
    body.pop("prompt" if path == CHAT else "messages")
    status, _, text = call(service, path, body)
    error = json.loads(text)["error"]
    assert status == 404 and error["param"] == "model"
    assert "classifier model, not a generative one" in error["message"] and path in error[
        "message"]


def test_the_bearer_key_guards_the_routes() -> None:
    service = make(StandInGenerator(), api_keys="sk-1")
    status, _, text = chat(service)
    assert status == 401 and json.loads(text)["error"]["code"] == "invalid_api_key"
    status, _, _ = call(service, CHAT, {"model": MODEL, "messages": HELLO},
                        headers={"authorization": "Bearer sk-1"})
    assert status == 200


class Clock:
    """A context whose remaining time runs out after ``calls`` look-ups."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        self.calls -= 1
        return 30_000 if self.calls >= 0 else 5


def test_a_deadline_before_the_first_token_is_504(service: Service,
                                                  generator: StandInGenerator) -> None:
    status, _, text = call(service, CHAT, {"model": MODEL, "messages": HELLO}, remaining_ms=5)
    error = json.loads(text)["error"]
    assert status == 504 and error["type"] == "server_error" and "token" in error["message"]
    # the pipeline's own check (should_stop before its first step) answers the same
    result = service(http_event("POST", CHAT, json.dumps({"model": MODEL, "messages": HELLO})),
                     Clock(1))
    assert result["statusCode"] == 504 and generator.open == 0


def test_a_deadline_shorter_than_the_slowest_prefill_seen_is_504(
        service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    from handler.api.openai.chat import Run

    assert chat(service)[0] == 200
    assert Run.slowest_prefill_ms > 0  # measured on that request
    monkeypatch.setattr(Run, "slowest_prefill_ms", 500.0)
    status, _, text = call(service, CHAT, {"model": MODEL, "messages": HELLO}, remaining_ms=400)
    assert status == 504 and "500 ms" in json.loads(text)["error"]["message"]
    assert call(service, CHAT, {"model": MODEL, "messages": HELLO}, remaining_ms=600)[0] == 200


@pytest.mark.parametrize("stream", [False, True])
def test_the_deadline_during_generation_finishes_with_length(
        service: Service, generator: StandInGenerator, stream: bool) -> None:
    body = json.dumps({"model": MODEL, "messages": HELLO, "stream": stream})
    # the route's own look, then the pipeline's before each step: three tokens, then time up
    result = service(http_event("POST", CHAT, body), Clock(4))
    assert result["statusCode"] == 200
    if stream:
        raw = chunks(result["body"])
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in raw)
        last = raw[-1]["choices"][0]
    else:
        last = json.loads(result["body"])["choices"][0]
        text = last["message"]["content"]
    assert last["finish_reason"] == "length" and text == " alpha beta gamma"
    assert generator.open == 0


def test_server_timing_and_emf_carry_ttft_and_tokens_per_second(service: Service) -> None:
    _, headers, _ = chat(service)
    timing = dict(part.split(";", 1) for part in headers["server-timing"].split(", "))
    assert set(timing) >= {"decode", "ttft", "generate", "tokens-per-s", "total"}
    assert timing["tokens-per-s"].startswith("desc=") and float(timing["tokens-per-s"][5:]) > 0
    assert float(timing["ttft"][4:]) <= float(timing["total"][4:])
    log = service.telemetry.stream.getvalue()  # type: ignore[attr-defined]
    line = json.loads(log.splitlines()[-1])
    units = {m["Name"]: m["Unit"] for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert units["TimeToFirstToken"] == units["Generation"] == "Milliseconds"
    assert units["TokensPerSecond"] == "Count/Second" and line["TokensPerSecond"] > 0


def live(service: Service, body: dict[str, Any]) -> tuple[Any, Iterator[bytes]]:
    answer = service.stream(http_event("POST", CHAT, json.dumps(body)), Context("req-1"))
    return answer, iter(answer.chunks)


def test_live_streaming_sends_each_token_as_it_comes(service: Service,
                                                     generator: StandInGenerator) -> None:
    buffered = chat(service, stream=True)[2]
    answer, pieces = live(service, {"model": MODEL, "messages": HELLO, "stream": True})
    assert answer.status == 200 and answer.headers["content-type"].startswith(
        "text/event-stream")
    assert "ttft;dur=" in answer.headers["server-timing"]
    assert "prefill;dur=" in answer.headers["server-timing"]
    first = next(pieces)  # the role chunk, before any further token is asked for
    assert generator.open == 1
    rest = list(pieces)
    assert len(rest) > 8 and generator.open == 0
    assert chunks((first + b"".join(rest)).decode()) == chunks(buffered)
    finished = json.loads(service.telemetry.stream.getvalue().splitlines()[-1])  # type: ignore[attr-defined]
    assert finished["message"] == "stream finished" and finished["completionTokens"] == 9
    assert finished["TokensPerSecond"] > 0 and finished["Generation"] > 0
    assert finished["_aws"]["CloudWatchMetrics"][0]["Metrics"]


def test_a_caller_gone_mid_stream_frees_the_generation(service: Service,
                                                       generator: StandInGenerator) -> None:
    _, pieces = live(service, {"model": MODEL, "messages": HELLO, "stream": True})
    next(pieces), next(pieces)
    assert generator.open == 1
    pieces.close()  # type: ignore[attr-defined]  (what the runtime does when the caller goes)
    assert generator.open == 0
    assert chat(service)[0] == 200  # and the environment serves the next request


def test_live_mode_answers_errors_and_unstreamed_requests_in_one_chunk(
        service: Service) -> None:
    answer, pieces = live(service, {"model": MODEL, "messages": HELLO})
    assert answer.status == 200 and json.loads(b"".join(pieces))["object"] == "chat.completion"
    answer, pieces = live(service, {"model": MODEL, "messages": HELLO, "n": 3, "stream": True})
    assert answer.status == 400 and json.loads(b"".join(pieces))["error"]["param"] == "n"


class Failing(StandInGenerator):
    """Fails after two tokens, as a broken model run would."""

    def _steps(self, used: int, params: Any, should_stop: Any) -> Iterator[Any]:
        steps = super()._steps(used, params, should_stop)
        try:
            yield next(steps)
            yield next(steps)
            raise InvalidInputError("boom")
        finally:
            steps.close()  # type: ignore[attr-defined]


def test_a_failure_mid_stream_is_an_error_event_and_buffered_a_status() -> None:
    generator = Failing()
    service = make(generator)
    _, pieces = live(service, {"model": MODEL, "messages": HELLO, "stream": True})
    data = events(b"".join(pieces).decode())
    assert json.loads(data[-1])["error"]["message"] == "boom" and "[DONE]" not in data
    status, _, text = chat(service, stream=True)
    assert status == 400 and json.loads(text)["error"]["message"] == "boom"
    assert generator.open == 0
