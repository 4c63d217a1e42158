"""The decode loop: prefill the prompt, then one token a step until EOS, a stop sequence,
``max_tokens``, the context's end, or ``should_stop()`` (the caller gone, the deadline near).

Each step yields a ``Step``: the text it adds (valid UTF-8, with a possible stop sequence held
back), the token, and on the last step why it ended. Closing the iterator early (``close()``, or
a ``for`` loop that breaks and drops it) releases the sequence's ORT values at once.

Two things a warm environment adds (``handler.settings``): the prefix cache
(``handler.generation.prefix``: a prompt sharing its start with an earlier sequence prefills
only the rest; the reused count goes to ``Server-Timing`` as ``prefix-hit``), and prompt-lookup
speculative decoding (``handler.generation.lookup``: greedy only, on a shared-buffer cache whose
graph gives every position's logits; the same tokens, fewer passes where the answer copies its
input).
"""

from __future__ import annotations

from handler.errors import InferenceError, InvalidInputError
from handler.generation.cache import KVCache
from handler.generation.deadline import Deadline
from handler.generation.layout import DecoderLayout
from handler.generation.lookup import draft
from handler.generation.params import GenerationParams, Step
from handler.generation.pick import ArgMax, Sample
from handler.generation.prefix import PrefixCache
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


FIRST_ROOM = 256  # answer positions a shared cache starts with


class Decoder:
    """A session with a decoder layout, its context length and end-of-sequence ids.
    ``shared``: the graph takes one past/present buffer (``KVCache``'s shared mode)."""

    def __init__(self, session: Session, layout: DecoderLayout, context_length: int,
                 eos_ids: frozenset[int], *, shared: bool = False) -> None:
        self.layout = layout
        self.context_length = context_length
        self.eos_ids = eos_ids
        self.shared = shared
        self.prefix: PrefixCache | None = None
        self.lookup = 0
        self.runner = ValueRun(session, layout.inputs(), layout.outputs())
        self._spare: Any = None  # the last sequence's shared buffer, for the next
        # greedy choices and draws in ORT (handler.generation.pick: its figures); float32 graphs
        float32 = layout.logits_dtype == "float32"
        self.argmax = ArgMax() if float32 else None
        self.sample = Sample() if float32 else None
        self._rows: ArgMax | None = None  # every position's choice, made on first use

    def configure(self, prefix_bytes: int, lookup: int) -> None:
        """``prefix_bytes``: the prefix cache's budget (0: none); ``lookup``: draft tokens a
        step for prompt-lookup decoding (0: off; a shared-buffer cache only)."""
        self.prefix = PrefixCache(prefix_bytes) if prefix_bytes > 0 else None
        self.lookup = lookup if self.shared else 0

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
        lookup = self.lookup
        # (the shared buffer grows by doubling: a request may ask for the whole context)
        capacity = (min(self.context_length, len(prompt_ids) + min(budget, FIRST_ROOM) + lookup)
                    if self.shared else 0)
        spare, self._spare = self._spare, None
        cache = KVCache(self.runner, self.layout, self.context_length, capacity, spare)
        sampler = Sampler(params)
        text, stops = Detokenizer(tokenizer), StopText(params.stop)
        seen = list(prompt_ids) if params.repetition_penalty != 1.0 else []
        eos = self.eos_ids
        # a penalty changes the row before the choice: that needs the row in Python
        argmax = self.argmax if params.greedy and not seen else None
        sample = self.sample if not params.greedy and not seen else None
        if argmax is None:
            lookup = 0
        try:
            reused = self._reuse(cache, prompt_ids)
            if isinstance(should_stop, Deadline):
                should_stop.timings["prefix-hit"] = float(reused)
            logits = cache.forward(prompt_ids[reused:])
            produced = 0
            checked: list[int] = []  # draft tokens a pass confirmed (already in the cache)
            chosen: int | None = None  # the pass's own choice after them
            while True:
                fed = bool(checked)
                if checked:
                    token = checked.pop(0)
                elif chosen is not None:
                    token, chosen = chosen, None
                elif argmax is not None:
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
                if fed:
                    continue
                guess = draft(cache.tokens, token, min(lookup, budget - produced - 1,
                                                        self.context_length - cache.length - 1))
                logits = cache.forward([token, *guess])
                if guess:
                    logits, checked, chosen = self._check(cache, logits, token, guess)
                    lookup = self.lookup
        except OrtError as exc:  # a kernel failure: the route's 500 with ORT's first line
            raise InferenceError(f"generation failed: {first_line(exc)}") from exc
        finally:
            self._keep(cache)

    def _reuse(self, cache: KVCache, prompt_ids: list[int]) -> int:
        """Positions of the prompt the prefix cache already holds, copied into ``cache``."""
        if self.prefix is None:
            return 0
        entry, reused = self.prefix.find(prompt_ids)
        if entry is not None:
            cache.restore(entry.block, len(entry.tokens), reused, prompt_ids)
        return reused

    def _check(self, cache: KVCache, logits: int, token: int, guess: list[int]
               ) -> tuple[int, list[int], int | None]:
        """The draft tokens the pass over ``token`` and ``guess`` confirms (their positions stay
        in the cache, the rest is dropped) and the pass's choice after them. A graph that gives
        the last position's logits only (build-model's projection) cannot check a draft:
        ``token`` runs again alone, and lookup stays off in this environment."""
        count = 1 + len(guess)
        if self.runner.shape(logits)[1] != count:
            self.lookup = 0
            cache.truncate(cache.length - count)
            return cache.forward([token]), [], None
        if self._rows is None:
            self._rows = ArgMax(rows=True)
        best = self._rows.choose_all(logits, count)
        taken = 0
        while taken < len(guess) and best[taken] == guess[taken]:
            taken += 1
        cache.truncate(cache.length - (len(guess) - taken))
        return logits, guess[:taken], best[taken]

    def _keep(self, cache: KVCache) -> None:
        """The sequence's positions into the prefix cache, its buffer kept for the next."""
        try:
            if self.prefix is not None and cache.length:
                self.prefix.add(tuple(cache.tokens), cache.snapshot(cache.length))
        finally:
            cache.close()
            if cache.buffer is not None and (self._spare is None
                                             or len(cache.buffer) > len(self._spare)):
                self._spare = cache.buffer


def _finish(text: Detokenizer, stops: StopText) -> tuple[str, bool]:
    """The text still pending when generation ends: an incomplete character, and the tail held
    back for a stop sequence that never came (or cut at one the last bytes completed)."""
    tail, stopped = stops.feed(text.flush())
    return (tail if stopped else tail + stops.flush()), stopped
