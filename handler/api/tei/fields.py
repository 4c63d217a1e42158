"""The request fields the text-embeddings-inference routes (``handler.api.tei.embed``,
``handler.api.tei.rerank``) read the same way, and their truncation of the pipeline's one
shared tokenizer."""

from __future__ import annotations

from contextlib import contextmanager

from handler.api.tei.errors import TeiError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from handler.pipelines.text_inputs import TextInputs

MAX_CHAR_MULTIPLIER = 250  # TEI's: an input may have max_input_length × this many characters
DIRECTIONS = {"left": "left", "Left": "left", "right": "right", "Right": "right"}


def flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if value.__class__ is not bool:
        raise TeiError(f"`{name}` must be true or false, got {value!r}")
    return value


def truncation_direction(body: dict[str, Any]) -> str:
    """``left`` or ``right`` (the default), as TEI spells them either way."""
    raw = body.get("truncation_direction")
    direction = "right" if raw is None else DIRECTIONS.get(raw) if isinstance(raw, str) else None
    if direction is None:
        raise TeiError(f"`truncation_direction` must be 'left' or 'right', got {raw!r}")
    return direction


@contextmanager
def truncating_from(text: TextInputs, direction: str) -> Iterator[None]:
    """The tokenizer cuts from ``direction`` inside the block; the one shared tokenizer is put
    back (cutting from the right) however the block ends."""
    if direction != "left":
        yield
        return
    text.tokenizer.enable_truncation(text.max_length, direction="left")
    try:
        yield
    finally:
        text.tokenizer.enable_truncation(text.max_length)


def too_long(text: TextInputs, *sentence: str, special: bool = True) -> TeiError:
    """TEI's 422 for an input the tokenizer had to cut, naming its whole length."""
    tokenizer = text.tokenizer
    tokenizer.no_truncation()
    try:
        given = len(tokenizer.encode(*sentence, add_special_tokens=special).ids)
    finally:
        tokenizer.enable_truncation(text.max_length)
    return TeiError(f"Input validation error: `inputs` must have less than {text.max_length} "
                    f"tokens. Given: {given}")
