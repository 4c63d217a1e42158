"""What a generation request asks for, and what each decoding step yields (standard library
only: the OpenAI routes, ``/predict`` and the pipeline share these records)."""

from __future__ import annotations

from typing import NamedTuple


class GenerationParams(NamedTuple):
    max_tokens: int
    temperature: float = 1.0  # 0 → greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 → no top-k cut
    seed: int | None = None
    repetition_penalty: float = 1.0
    stop: tuple[str, ...] = ()  # stop sequences (not included in the output)


class Step(NamedTuple):
    text: str  # the text delta this step adds ("" while it may be the start of a stop sequence)
    token_ids: tuple[int, ...]  # tokens this step produced
    finish_reason: str | None  # None, or on the last step: "stop" (EOS or a stop sequence) or
    # "length" (max_tokens, the context full, or should_stop())
