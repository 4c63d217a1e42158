"""The generate pipeline through the real handler on tiny random-weight decoders (Llama- and
GPT-2-style): greedy tokens equal transformers' ``generate`` token for token; sampling is
reproducible by seed; stop sequences, EOS, max_tokens and should_stop end generation with the
right finish_reason; bad requests are clear 400s and leave the environment serving."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handler.generation.params import GenerationParams
from tests.functional.test_handler_errors import call, http_event
from tests.support import decoders

NEW_TOKENS = 64


@pytest.fixture
def service(make_service: Callable[..., Any], decoder_dir: Path) -> Any:
    return make_service(decoder_dir, pipeline="generate")


def predict(service: Any, prompt: Any, **parameters: Any) -> tuple[int, dict[str, Any]]:
    status, body, _ = call(service, http_event(body=json.dumps(
        {"inputs": prompt, "parameters": parameters})))
    return status, body


def kind_of(folder: Path) -> str:
    return folder.name.removeprefix("decoder-")


@pytest.mark.parametrize("prompt", decoders.PROMPTS)
def test_greedy_equals_transformers(service: Any, decoder_dir: Path, prompt: str) -> None:
    status, body = predict(service, prompt, temperature=0, max_tokens=NEW_TOKENS, details=True)
    assert status == 200, body
    prompt_ids = body["details"]["prompt_token_ids"]
    assert prompt_ids == service.pipeline.encode(prompt)
    want = decoders.transformers_greedy(kind_of(decoder_dir), prompt_ids, NEW_TOKENS)
    assert body["details"]["token_ids"] == want
    assert body["generated_text"] == service.pipeline.tokenizer.decode(want)
    assert body["finish_reason"] == "length"
    assert body["usage"] == {"prompt_tokens": len(prompt_ids), "completion_tokens": NEW_TOKENS,
                             "total_tokens": len(prompt_ids) + NEW_TOKENS}


def tokens(service: Any, **parameters: Any) -> list[int]:
    status, body = predict(service, decoders.PROMPTS[0], max_tokens=24, details=True,
                           **parameters)
    assert status == 200, body
    ids: list[int] = body["details"]["token_ids"]
    return ids


def test_seeded_sampling_reproduces_itself(service: Any) -> None:
    first = tokens(service, temperature=1.5, seed=7)
    assert tokens(service, temperature=1.5, seed=7) == first
    assert tokens(service, temperature=1.5, seed=8) != first
    assert first != tokens(service, temperature=0)  # a draw, not the argmax


def test_top_k_one_is_greedy(service: Any) -> None:
    assert tokens(service, top_k=1, temperature=1.5, seed=3) == tokens(service, temperature=0)


def test_top_p_and_penalty_change_the_draw_within_reason(service: Any) -> None:
    nucleus = tokens(service, temperature=1.0, top_p=1e-9, seed=1)
    assert nucleus == tokens(service, temperature=0)  # a tiny nucleus holds the argmax only
    penalised = tokens(service, temperature=0, repetition_penalty=1.5)
    assert len(set(penalised)) > len(set(tokens(service, temperature=0)))


def test_stop_sequence_cuts_the_text(service: Any) -> None:
    _, full = predict(service, decoders.PROMPTS[0], temperature=0, max_tokens=NEW_TOKENS)
    text = full["generated_text"]
    stop = text[10:13]
    status, body = predict(service, decoders.PROMPTS[0], temperature=0,
                           max_tokens=NEW_TOKENS, stop=["\x00never", stop])
    assert status == 200, body
    assert body["finish_reason"] == "stop"
    assert body["generated_text"] == text[:text.find(stop)]


def test_eos_from_the_artifact_stops(decoder_dir: Path, tmp_path: Path,
                                     make_service: Callable[..., Any]) -> None:
    plain = make_service(decoder_dir, pipeline="generate")
    ids = tokens(plain, temperature=0)
    eos = ids[5]
    copy = tmp_path / "model"
    shutil.copytree(decoder_dir, copy)
    (copy / "generation_config.json").write_text(json.dumps({"eos_token_id": [eos]}))
    status, body = predict(make_service(copy, pipeline="generate"), decoders.PROMPTS[0],
                           temperature=0, max_tokens=24, details=True)
    assert status == 200, body
    cut = ids.index(eos)  # the first time the model chooses it
    assert body["finish_reason"] == "stop"
    assert body["details"]["token_ids"] == ids[:cut + 1]
    assert body["generated_text"] == plain.pipeline.tokenizer.decode(ids[:cut])


def test_max_tokens_is_length(service: Any) -> None:
    status, body = predict(service, decoders.PROMPTS[1], temperature=0, max_tokens=3)
    assert (status, body["finish_reason"], body["usage"]["completion_tokens"]) == \
        (200, "length", 3)


def test_should_stop_ends_with_length(service: Any) -> None:
    pipeline = service.pipeline
    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return len(calls) >= 4

    steps = list(pipeline.generate(pipeline.encode("Hello"),
                                   GenerationParams(max_tokens=50, temperature=0), should_stop))
    assert len(steps) == 4
    assert [s.finish_reason for s in steps] == [None, None, None, "length"]


def test_closing_early_frees_and_the_next_generation_is_the_same(service: Any) -> None:
    pipeline = service.pipeline
    params = GenerationParams(max_tokens=20, temperature=0)
    ids = pipeline.encode("Hello")
    whole = [s.token_ids for s in pipeline.generate(ids, params, lambda: False)]
    steps = pipeline.generate(ids, params, lambda: False)
    assert next(steps).token_ids == whole[0]
    steps.close()
    assert [s.token_ids for s in pipeline.generate(ids, params, lambda: False)] == whole


def test_chat_template_renders_messages(service: Any) -> None:
    prompt = service.pipeline.render_chat([{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Hi"}])
    assert prompt == "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n"


LONG = "word " * 400


@pytest.mark.parametrize(("prompt", "parameters", "fragment"), [
    ("", {}, "non-empty prompt"),
    (["a list"], {}, "non-empty prompt"),
    ("Hi", {"max_tokens": 0}, "max_tokens must be from 1"),
    ("Hi", {"max_tokens": 10**6}, "max_tokens must be from 1 to 256"),
    ("Hi", {"max_tokens": 2.5}, "max_tokens must be an integer"),
    (LONG, {}, "leaving no room"),
    ("Hi", {"temperature": -1}, "temperature must be at least 0"),
    ("Hi", {"top_p": 0}, "top_p must be above 0"),
    ("Hi", {"top_p": 2}, "at most 1"),
    ("Hi", {"top_k": -1}, "top_k must be from 0"),
    ("Hi", {"repetition_penalty": 0}, "repetition_penalty must be above 0"),
    ("Hi", {"stop": ["a", "b", "c", "d", "e"]}, "at most 4"),
    ("Hi", {"stop": [""]}, "non-empty"),
    ("Hi", {"max_token": 5}, "unknown parameters 'max_token'"),
    ("Hi", {"details": "yes"}, "details must be true or false"),
])
def test_bad_requests_are_400(service: Any, prompt: Any, parameters: dict[str, Any],
                              fragment: str) -> None:
    status, body = predict(service, prompt, **parameters)
    assert status == 400, body
    assert body["error"]["type"] == "InvalidInput"
    assert fragment in body["error"]["message"]
    assert predict(service, "Hi", max_tokens=2)[0] == 200  # still serving


class Countdown:
    """A Lambda context whose remaining time drops 100 ms at each look."""

    aws_request_id = "req-countdown"

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        self.remaining_ms -= 100
        return self.remaining_ms


def test_the_deadline_ends_generation_with_length_or_a_504(service: Any) -> None:
    event = http_event(body=json.dumps({"inputs": "Hello", "parameters": {
        "temperature": 0, "max_tokens": 200}}))
    result = service(event, Countdown(1_000))
    body = json.loads(result["body"])
    assert result["statusCode"] == 200, body
    assert body["finish_reason"] == "length"
    assert 1 <= body["usage"]["completion_tokens"] <= 10
    result = service(event, Countdown(110))  # 10 ms left at the first look: no token fits
    assert result["statusCode"] == 504
    assert json.loads(result["body"])["error"]["type"] == "DeadlineExceeded"


def test_a_decoder_on_two_threads_spins_and_a_single_thread_or_other_model_does_not(
        make_service: Callable[..., Any], decoder_dir: Path, tmp_path: Path) -> None:
    from onnx_lambda.tiny_models import linear

    assert make_service(decoder_dir, pipeline="generate", threads="2").model.spinning
    assert not make_service(decoder_dir, pipeline="generate", threads="1").model.spinning
    assert not make_service(linear(tmp_path / "linear.onnx"), threads="2").model.spinning


def test_snapstart_snapshots_a_warm_decoder_and_the_restored_one_serves(
        service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The zip + layer SnapStart path with a generative model: the before-snapshot hook runs
    the warm-up (a prefill on the manifest's example) and the restored environment answers."""
    import sys
    import types

    from handler import snapstart

    hooks: dict[str, list[Callable[[], None]]] = {"before": [], "after": []}
    module = types.ModuleType("snapshot_restore_py")
    module.register_before_snapshot = hooks["before"].append  # type: ignore[attr-defined]
    module.register_after_restore = hooks["after"].append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", module)
    service.warmup_status = "off"
    assert snapstart.register(service.warm_up, service.state.refresh,
                              {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"})
    (before,), (after,) = hooks["before"], hooks["after"]
    before()
    assert service.warmup_status == "ok"
    after()
    status, body = predict(service, "The cat", max_tokens=4, temperature=0)
    assert status == 200 and body["finish_reason"] == "length", body
