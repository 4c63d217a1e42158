"""The decode loop's engine on onnxruntime-genai's own graph (its builder's export of the tiny
Llama decoder: ``GroupQueryAttention``, a symbolic cache head size) and on the project's export:
greedy tokens equal transformers' with a growing and with a shared past/present cache; the
prefix cache gives the same tokens as none, counts its hits (``Server-Timing`` ``prefix-hit``)
and stays within its byte budget (least recently used out); prompt-lookup speculative decoding
gives the same greedy tokens in fewer passes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handler.generation import decoder as decoder_module
from handler.generation.cache import position_bytes
from handler.generation.deadline import Deadline
from handler.generation.decoder import Decoder
from handler.generation.layout import recognise
from handler.generation.params import GenerationParams
from handler.ort.session import Session
from handler.pipelines.tokenizer_files import load
from tests.functional.test_handler_errors import call, http_event
from tests.support import decoders

# genai's builder runs once, in a process of its own (torch, transformers): ~30 s on 2 idle vCPUs
pytestmark = pytest.mark.timeout(900)
CONTEXT = 256
# a shared start long enough that reusing it matters, then different endings
SYSTEM = "You are a careful assistant. Answer briefly and name your sources. " * 3


@pytest.fixture(scope="module")
def genai_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return decoders.genai_export(tmp_path_factory)


@pytest.fixture(scope="module")
def session(genai_dir: Path) -> Session:
    return Session(str(genai_dir / "model.onnx"), intra_op_threads=1, optimization="all")


@pytest.fixture(scope="module")
def tokenizer(genai_dir: Path) -> Any:
    return load(str(genai_dir / "tokenizer.json"))


def decoder(session: Session, genai_dir: Path, *, shared: bool = True, prefix_bytes: int = 0,
            lookup: int = 0) -> Decoder:
    head = json.loads((genai_dir / "genai_config.json").read_text())["model"]["decoder"]
    layout = recognise(session.inputs, session.outputs, head["head_size"])
    made = Decoder(session, layout, CONTEXT, frozenset(), shared=shared)
    made.configure(prefix_bytes, lookup)
    return made


def greedy(made: Decoder, tokenizer: Any, ids: list[int], count: int = 32
           ) -> tuple[list[int], Deadline]:
    deadline = Deadline(None, 0)
    steps = made.generate(ids, GenerationParams(max_tokens=count, temperature=0.0), tokenizer,
                          deadline)
    return [t for step in steps for t in step.token_ids], deadline


@pytest.mark.parametrize("shared", [True, False], ids=["shared buffer", "growing cache"])
def test_genai_graph_greedy_equals_transformers(session: Session, genai_dir: Path,
                                                tokenizer: Any, shared: bool) -> None:
    made = decoder(session, genai_dir, shared=shared)
    for prompt in decoders.PROMPTS:
        ids = tokenizer.encode(prompt).ids
        got, _ = greedy(made, tokenizer, ids)
        assert got == decoders.transformers_greedy("llama", ids, 32), prompt


def test_a_shared_buffer_outgrown_mid_answer_keeps_the_tokens(
        session: Session, genai_dir: Path, tokenizer: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decoder_module, "FIRST_ROOM", 2)  # room for 2 answer positions: grows
    made = decoder(session, genai_dir, lookup=3)
    ids = tokenizer.encode(decoders.PROMPTS[1]).ids
    got, _ = greedy(made, tokenizer, ids, 40)
    assert got == decoders.transformers_greedy("llama", ids, 40)


@pytest.mark.parametrize("shared", [True, False], ids=["shared buffer", "growing cache"])
def test_prefix_cache_gives_the_same_tokens_and_counts_its_hits(
        session: Session, genai_dir: Path, tokenizer: Any, shared: bool) -> None:
    plain = decoder(session, genai_dir, shared=shared)
    cached = decoder(session, genai_dir, shared=shared, prefix_bytes=1 << 24)
    prompts = [tokenizer.encode(SYSTEM + question).ids
               for question in ("Why is the sky blue?", "Where do cats sleep?")]
    first, second = prompts
    shared_start = next(i for i, (a, b) in enumerate(zip(first, second, strict=False))
                        if a != b)
    hits = []
    for ids in (first, second, first):
        want, _ = greedy(plain, tokenizer, ids)
        got, deadline = greedy(cached, tokenizer, ids)
        assert got == want
        hits.append(deadline.timings["prefix-hit"])
    # nothing held at first; the shared start next; all but the last prompt token at last
    assert hits == [0, shared_start, len(first) - 1]
    assert cached.prefix is not None and cached.prefix.bytes <= 1 << 24


def test_prefix_cache_keeps_to_its_budget(session: Session, genai_dir: Path,
                                          tokenizer: Any) -> None:
    layout = decoder(session, genai_dir).layout
    one = tokenizer.encode(SYSTEM + "Why is the sky blue?").ids
    other = tokenizer.encode("Le chat dort. " * 8).ids
    # room for either sequence (its prompt and 7 answered tokens the model read), not both
    sizes = sorted(len(ids) + 7 for ids in (one, other))
    budget = (sizes[1] + sizes[0] // 2) * position_bytes(layout)
    cached = decoder(session, genai_dir, prefix_bytes=budget)
    assert cached.prefix is not None
    greedy(cached, tokenizer, one, 8)
    greedy(cached, tokenizer, other, 8)  # evicts the first, least recently used
    assert len(cached.prefix) == 1 and cached.prefix.bytes <= budget
    _, deadline = greedy(cached, tokenizer, one, 8)
    bos = next(i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b)
    assert deadline.timings["prefix-hit"] == bos  # its own entry was gone: the BOS it shares
    _, deadline = greedy(cached, tokenizer, one, 8)
    assert deadline.timings["prefix-hit"] == len(one) - 1


def test_prompt_lookup_gives_the_same_greedy_tokens_in_fewer_passes(
        session: Session, genai_dir: Path, tokenizer: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    plain = decoder(session, genai_dir)
    speculative = decoder(session, genai_dir, lookup=4)
    passes = []
    run = speculative.runner.run

    def counted(values: Any, outputs: Any = ()) -> list[int]:
        passes.append(1)
        return run(values, outputs)

    monkeypatch.setattr(speculative.runner, "run", counted)
    for prompt in decoders.PROMPTS:
        ids = tokenizer.encode(prompt).ids
        want, _ = greedy(plain, tokenizer, ids, 48)
        got, _ = greedy(speculative, tokenizer, ids, 48)
        assert got == want == decoders.transformers_greedy("llama", ids, 48)
    # the random model repeats itself: drafts from its own output hold
    assert len(passes) < 3 * 48


def test_server_timing_reports_the_prefix_hit(make_service: Callable[..., Any],
                                              decoder_dir: Path) -> None:
    service = make_service(decoder_dir, pipeline="generate")
    hits = []
    for question in ("Why is the sky blue?", "Where do cats sleep?"):
        status, body, headers = call(service, http_event(body=json.dumps(
            {"inputs": SYSTEM + question, "parameters": {"temperature": 0, "max_tokens": 4}})))
        assert status == 200, body
        timing = {k.lower(): v for k, v in headers.items()}["server-timing"]
        entry = next(p for p in timing.split(", ") if p.startswith("prefix-hit;"))
        hits.append(float(entry.split("desc=")[1]))
    assert hits[0] == 0 and hits[1] > 10


def test_prefix_cache_off_by_setting(make_service: Callable[..., Any],
                                     decoder_dir: Path) -> None:
    service = make_service(decoder_dir, pipeline="generate", prefix_cache_mb="0")
    assert service.pipeline.decoder.prefix is None
    for _ in range(2):
        status, _, headers = call(service, http_event(body=json.dumps(
            {"inputs": SYSTEM, "parameters": {"temperature": 0, "max_tokens": 2}})))
        assert status == 200
        assert "prefix-hit;desc=0" in {k.lower(): v for k, v in headers.items()}["server-timing"]
