"""What a generation request asks for, and what each decode step yields (standard library only:
the OpenAI routes build the same records from their own request shapes).

``from_parameters`` reads ``/predict``'s ``parameters`` object with the limits OpenAI's API
documents for the same names (temperature 0–2, top_p in (0, 1], at most 4 stop sequences), and
refuses names it does not know: a misspelt ``max_token`` must not silently mean the default.
"""

from __future__ import annotations

import math

from handler.errors import FieldError, InvalidInputError
from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MAX_TEMPERATURE = 2.0  # OpenAI's documented range for temperature: 0 to 2
MAX_STOP = 4  # OpenAI's limit on stop sequences
DEFAULT_MAX_TOKENS = 256


class GenerationParams(NamedTuple):
    max_tokens: int
    temperature: float = 1.0  # 0 → greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 → no top-k cut
    seed: int | None = None
    repetition_penalty: float = 1.0
    stop: tuple[str, ...] = ()  # stop sequences (not included in the output)

    @property
    def greedy(self) -> bool:
        """Whether the choice is the most likely token: temperature 0, or a top-k of 1."""
        return self.temperature == 0.0 or self.top_k == 1


class Step(NamedTuple):
    text: str  # the text this step adds ("" while it may be the start of a stop sequence)
    token_ids: tuple[int, ...]  # tokens this step produced
    finish_reason: str | None  # on the last step: "stop" (EOS, stop sequence) or "length"


FIELDS = ("max_tokens", "temperature", "top_p", "top_k", "seed", "repetition_penalty", "stop")


def from_parameters(parameters: Mapping[str, Any], context_length: int,
                    extra: tuple[str, ...] = ()) -> GenerationParams:
    """``/predict``'s ``parameters`` → ``GenerationParams``, or ``InvalidInputError`` naming the
    field and the range it must be in; ``extra``: more names the caller reads itself."""
    unknown = sorted(set(parameters) - set(FIELDS) - set(extra))
    if unknown:
        raise InvalidInputError(f"unknown parameters {', '.join(map(repr, unknown))}: "
                                f"generation takes {', '.join(FIELDS + extra)}")
    get = parameters.get
    max_tokens = get("max_tokens", min(DEFAULT_MAX_TOKENS, context_length))
    return GenerationParams(
        max_tokens=integer("max_tokens", max_tokens, 1, context_length),
        temperature=number("temperature", get("temperature", 1.0), 0.0, MAX_TEMPERATURE),
        top_p=number("top_p", get("top_p", 1.0), 0.0, 1.0, low_open=True),
        top_k=integer("top_k", get("top_k", 0), 0, None),
        seed=None if get("seed") is None else integer("seed", get("seed"), None, None),
        repetition_penalty=number("repetition_penalty", get("repetition_penalty", 1.0), 0.0,
                                  None, low_open=True),
        stop=stop_sequences(get("stop")))


# The checks of one field, shared with the OpenAI routes (handler.api.openai): each refusal
# names its field (OpenAI's ``param``).
def integer(name: str, value: Any, low: int | None, high: int | None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise FieldError(f"{name} must be an integer, got {value!r:.40}", name)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"from {low}" if high is None else f"from {low} to {high}"
        raise FieldError(f"{name} must be {bounds}, got {value}", name)
    return value


def number(name: str, value: Any, low: float, high: float | None, *,
           low_open: bool = False) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise FieldError(f"{name} must be a number, got {value!r:.40}", name)
    if value < low or (low_open and value == low) or (high is not None and value > high):
        low_side = f"above {low:g}" if low_open else f"at least {low:g}"
        high_side = "" if high is None else f" and at most {high:g}"
        raise FieldError(f"{name} must be {low_side}{high_side}, got {value:g}", name)
    return float(value)


def stop_sequences(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if (not isinstance(stops, list) or len(stops) > MAX_STOP
            or not all(isinstance(s, str) and s for s in stops)):
        raise FieldError(f"stop must be a non-empty string or a list of at most {MAX_STOP} "
                         "non-empty strings", "stop")
    return tuple(stops)
