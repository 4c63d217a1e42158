"""A stand-in for the ``generate`` pipeline: the Generation interface of ``handler.generation``
(``context_length``, ``encode``, ``render_chat``, ``generate``) with deterministic tokens and
no model, for the OpenAI routes' unit tests. A fake, acceptable at the unit tier only: the
end-to-end tests (test_openai_generation, test_openai_streaming) run the real pipeline on the
test decoder.

Words are tokens: ``encode`` gives a BOS id then one id per word; ``generate`` answers the
words of ``WORDS`` in order, each with a leading space, until EOS after ``eos_after`` tokens,
``max_tokens``, the context's end or ``should_stop()``. Stop sequences are cut and held back
as the real pipeline does (text that may begin one is not sent until it cannot).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from handler.errors import InvalidInputError
from handler.generation.params import GenerationParams, Step

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu")
BOS = 1


class StandInGenerator:
    name = "generate"
    warning = ""
    capabilities = frozenset({"predict", "generate", "chat"})  # as the pipeline with a template

    def __init__(self, context_length: int = 64, eos_after: int = 8) -> None:
        self.context_length = context_length
        self.eos_after = eos_after
        self.calls: list[tuple[list[int], GenerationParams]] = []
        self.open = 0  # generators started and not closed yet (the KV cache, in the real one)

    def encode(self, text: str) -> list[int]:
        return [BOS, *(2 + sum(map(ord, word)) % 1000 for word in text.split())]

    def render_chat(self, messages: list[dict[str, Any]]) -> str:
        if messages[-1]["role"] == "assistant":  # as templates that expect a question last do
            raise InvalidInputError("the chat template needs the last message from the user")
        return "".join(f"<{m['role']}> {m['content']}\n" for m in messages) + "<assistant>"

    def generate(self, prompt_ids: list[int], params: GenerationParams,
                 should_stop: Callable[[], bool]) -> Iterator[Step]:
        if len(prompt_ids) <= 1:
            raise InvalidInputError("the prompt is empty")
        if len(prompt_ids) >= self.context_length:
            raise InvalidInputError(f"the prompt takes {len(prompt_ids)} tokens; the context "
                                    f"holds {self.context_length}")
        self.calls.append((prompt_ids, params))
        return self._steps(len(prompt_ids), params, should_stop)

    def _steps(self, used: int, params: GenerationParams,
               should_stop: Callable[[], bool]) -> Iterator[Step]:
        self.open += 1
        try:
            text, sent = "", 0
            for count in range(1, params.max_tokens + 1):
                if should_stop():
                    yield Step(text[sent:], (), "length")
                    return
                if count > self.eos_after:
                    yield Step(text[sent:], (0,), "stop")
                    return
                text += " " + WORDS[(count - 1) % len(WORDS)]
                token = (100 + count,)
                cut = min((text.find(s) for s in params.stop if s in text), default=-1)
                if cut >= 0:
                    yield Step(text[sent:cut], token, "stop")
                    return
                held = max((k for s in params.stop for k in range(1, len(s))
                            if text.endswith(s[:k])), default=0)
                final = count == params.max_tokens or used + count >= self.context_length
                if final:
                    yield Step(text[sent:], token, "length")
                    return
                yield Step(text[sent:len(text) - held], token, None)
                sent = len(text) - held
        finally:
            self.open -= 1

    def example(self) -> Any:
        return "hello"
