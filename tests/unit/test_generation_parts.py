"""The decode loop's pure-Python parts: stop sequences held back and cut, UTF-8-safe text
deltas, token choice as transformers defines it, and the request's parameters."""

from __future__ import annotations

import math

import pytest

from handler.errors import InvalidInputError
from handler.generation.params import GenerationParams, from_parameters
from handler.generation.sampling import Sampler
from handler.generation.text import Detokenizer, StopText


def feed_all(stops: tuple[str, ...], pieces: list[str]) -> tuple[list[str], bool]:
    text = StopText(stops)
    shown = []
    for piece in pieces:
        out, stopped = text.feed(piece)
        shown.append(out)
        if stopped:
            return shown, True
    shown.append(text.flush())
    return shown, False


def test_a_possible_stop_is_held_back_then_released() -> None:
    shown, stopped = feed_all(("END",), ["Hello E", "N", "ough"])
    assert shown == ["Hello ", "", "ENough", ""] and not stopped


def test_a_stop_across_pieces_cuts_before_it() -> None:
    shown, stopped = feed_all(("\n\n", "END"), ["one E", "N", "D two"])
    assert stopped and "".join(shown) == "one "


def test_the_earliest_stop_wins_and_no_stops_pass_through() -> None:
    assert StopText(("b", "a")).feed("xxaxb") == ("xx", True)
    assert StopText(()).feed("anything") == ("anything", False)


class Bytes:
    """A byte-level tokenizer: token i is one byte; decoding replaces broken UTF-8."""

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return bytes(ids).decode("utf-8", "replace")


def test_a_character_split_over_tokens_waits_until_whole() -> None:
    text = Detokenizer(Bytes())
    deltas = [text.add(b) for b in "aé🎉".encode()]
    assert deltas == ["a", "", "é", "", "", "", "🎉"]
    assert text.flush() == ""


def test_an_unfinished_character_is_flushed_as_a_replacement() -> None:
    text = Detokenizer(Bytes())
    assert [text.add(b) for b in b"x" + "é".encode()[:1]] == ["x", ""]
    assert text.flush() == "\ufffd"


def choose(logits: list[float], seen: tuple[int, ...] = (), **params: object) -> int:
    return Sampler(GenerationParams(max_tokens=1, **params)).choose(list(logits), seen)


def test_greedy_is_the_first_maximum() -> None:
    assert choose([0.1, 3.0, 3.0, -1.0], temperature=0) == 1
    assert choose([0.1, 3.0, 2.0], temperature=1.7, top_k=1, seed=5) == 1


def test_repetition_penalty_as_transformers_defines_it() -> None:
    sampler = Sampler(GenerationParams(max_tokens=1, repetition_penalty=2.0))
    logits = [4.0, -1.0, 3.0]
    sampler.penalise(logits, [0, 1, 1])
    assert logits == [2.0, -2.0, 3.0]  # positive divided, negative multiplied, once each
    assert choose([4.0, 1.0, 3.0], (0,), temperature=0, repetition_penalty=2.0) == 2


def probabilities(*values: float) -> list[float]:
    return [math.log(v) for v in values]


def draws(logits: list[float], **params: object) -> set[int]:
    return {choose(logits, seed=seed, **params) for seed in range(200)}


def test_top_p_keeps_the_smallest_set_that_reaches_p() -> None:
    logits = probabilities(0.5, 0.3, 0.2)
    assert draws(logits, top_p=0.6) == {0, 1}  # 0.5 < 0.6: the second joins; 0.8 ≥ 0.6
    assert draws(logits, top_p=0.5) == {0}  # transformers drops a cumulative mass ≤ 1 - p
    assert draws(logits) == {0, 1, 2}


def test_top_k_keeps_the_k_largest() -> None:
    assert draws(probabilities(0.1, 0.4, 0.2, 0.3), top_k=2) == {1, 3}


def test_a_seed_reproduces_its_draws() -> None:
    logits = probabilities(*([1.0] * 50))
    first = [choose(logits, seed=11) for _ in range(3)]
    assert first == [choose(logits, seed=11) for _ in range(3)]
    assert len({choose(logits, seed=s) for s in range(20)}) > 5


def test_parameters_defaults_and_limits() -> None:
    assert from_parameters({}, 100) == GenerationParams(max_tokens=100)
    assert from_parameters({"stop": "x", "seed": 3, "top_k": 4}, 1000).stop == ("x",)
    for bad, message in [({"max_tokens": True}, "max_tokens must be an integer"),
                         ({"temperature": 2.5}, "at most 2"),
                         ({"temperature": float("nan")}, "must be a number"),
                         ({"seed": 1.5}, "seed must be an integer"),
                         ({"stop": 7}, "stop must be"),
                         ({"top": 1}, "unknown parameters 'top'")]:
        with pytest.raises(InvalidInputError, match=message):
            from_parameters(bad, 100)
    assert from_parameters({"details": True}, 10, extra=("details",)).max_tokens == 10


def test_chat_templates_render_as_transformers_renders_them() -> None:
    from handler.generation.chat import ChatTemplate

    template = ChatTemplate(
        "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'tool' %}"
        "{{ raise_exception('no tools here') }}{% endif %}"
        "<{{ m['role'] }}>{{ m['content'] | tojson }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}", "<s>", "</s>")
    messages = [{"role": "user", "content": [{"type": "text", "text": "a <b> & é"}]}]
    assert template.render(messages) == '<s><user>"a <b> & é"\n<assistant>'
    with pytest.raises(InvalidInputError, match="rejects these messages: no tools here"):
        template.render([{"role": "tool", "content": "x"}])
    with pytest.raises(InvalidInputError, match=r"messages\[0\].role"):
        template.render([{"role": "wizard", "content": "x"}])
    with pytest.raises(InvalidInputError, match="messages is empty"):
        template.render([])


def test_a_chat_template_cannot_reach_python_internals() -> None:
    from handler.generation.chat import ChatTemplate

    template = ChatTemplate("{{ messages.__class__.__mro__ }}", "", "")
    with pytest.raises(InvalidInputError, match="unsafe"):
        template.render([{"role": "user", "content": "x"}])
