"""The decode loop: prefill the prompt, then one token a step until EOS, a stop sequence,
``max_tokens``, the context's end, or ``should_stop()`` (the caller gone, the deadline near).

Each step yields a ``Step``: the text it adds (valid UTF-8, with a possible stop sequence held
back), the token, and on the last step why it ended. Closing the iterator early (``close()``, or
a ``for`` loop that breaks and drops it) releases the sequence's ORT values at once.
"""

from __future__ import annotations

import time

from handler.errors import InferenceError, InvalidInputError
from handler.generation.cache import KVCache
from handler.generation.layout import DecoderLayout
from handler.generation.params import GenerationParams, Step
from handler.generation.pick import ArgMax, Sample
from handler.generation.sampling import Sampler
from handler.generation.text import Detokenizer, StopText
from handler.model import first_line
from handler.ort.capi import OrtError
from handler.ort.session import Session
from handler.ort.values import ValueRun

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any


class Decoder:
    """A session with a decoder layout, its context length and end-of-sequence ids."""

    def __init__(self, session: Session, layout: DecoderLayout, context_length: int,
                 eos_ids: frozenset[int]) -> None:
        self.layout = layout
        self.context_length = context_length
        self.eos_ids = eos_ids
        self.runner = ValueRun(session, layout.inputs(), layout.outputs())
        # greedy choices and draws in ORT (handler.generation.pick: its figures); float32 graphs
        float32 = layout.logits_dtype == "float32"
        self.argmax = ArgMax() if float32 else None
        self.sample = Sample() if float32 else None

    def check_prompt(self, prompt_ids: list[int]) -> int:
        """The tokens the context leaves after the prompt (at least 1), or InvalidInputError."""
        if not prompt_ids:
            raise InvalidInputError("the prompt is empty: nothing to continue")
        room = self.context_length - len(prompt_ids)
        if room < 1:
            raise InvalidInputError(f"the prompt is {len(prompt_ids)} tokens; the model's "
                                    f"context holds {self.context_length}, leaving no room to "
                                    "generate")
        return room

    def generate(self, prompt_ids: list[int], params: GenerationParams, tokenizer: Any,
                 should_stop: Callable[[], bool]) -> Iterator[Step]:
        budget = min(params.max_tokens, self.check_prompt(prompt_ids))
        return self._steps(prompt_ids, params, tokenizer, should_stop, budget)

    def _steps(self, prompt_ids: list[int], params: GenerationParams, tokenizer: Any,
               should_stop: Callable[[], bool], budget: int) -> Iterator[Step]:
        cache = KVCache(self.runner, self.layout, self.context_length)
        sampler = Sampler(params)
        text, stops = Detokenizer(tokenizer), StopText(params.stop)
        seen = list(prompt_ids) if params.repetition_penalty != 1.0 else []
        eos = self.eos_ids
        # a penalty changes the row before the choice: that needs the row in Python
        argmax = self.argmax if params.greedy and not seen else None
        sample = self.sample if not params.greedy and not seen else None
        try:
            logits = cache.forward(prompt_ids)
            produced = 0
            while True:
                if argmax is not None:
                    token = argmax.choose(logits)
                elif sample is not None:
                    token = sample.choose(logits, params.temperature, params.top_k,
                                          params.top_p, sampler.rng.random(), cache.vocab)
                else:
                    token = sampler.choose(cache.row(), seen)
                produced += 1
                if token in eos:
                    shown, _ = _finish(text, stops)
                    yield Step(shown, (token,), "stop")
                    return
                shown, stopped = stops.feed(text.add(token))
                if stopped:
                    yield Step(shown, (token,), "stop")
                    return
                if produced >= budget or should_stop():
                    tail, stopped = _finish(text, stops)
                    yield Step(shown + tail, (token,), "stop" if stopped else "length")
                    return
                yield Step(shown, (token,), None)
                if seen:
                    seen.append(token)
                logits = cache.forward([token])
        except OrtError as exc:  # a kernel failure: the route's 500 with ORT's first line
            raise InferenceError(f"generation failed: {first_line(exc)}") from exc
        finally:
            cache.close()


def _finish(text: Detokenizer, stops: StopText) -> tuple[str, bool]:
    """The text still pending when generation ends: an incomplete character, and the tail held
    back for a stop sequence that never came (or cut at one the last bytes completed)."""
    tail, stopped = stops.feed(text.flush())
    return (tail if stopped else tail + stops.flush()), stopped


def deadline(context: Any, margin_ms: float) -> Callable[[], bool]:
    """``should_stop`` for an invocation: True once the time left is under ``margin_ms`` plus
    twice the last step (the time between two calls), so the step it lets start can finish. A
    context without ``get_remaining_time_in_millis`` (a local call) never stops."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return lambda: False
    last = [0.0]

    def should_stop() -> bool:
        now = time.perf_counter()
        step_ms = (now - last[0]) * 1000.0 if last[0] else 0.0
        last[0] = now
        return bool(remaining() < margin_ms + 2.0 * step_ms)

    return should_stop
