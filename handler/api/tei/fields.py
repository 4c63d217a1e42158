"""What the text-embeddings-inference routes (``handler.tei_api``, ``handler.tei_rerank``)
share: TEI's error with its ``error_type`` and status, and the checks of the request fields
they have in common."""

from __future__ import annotations

from handler.errors import OnnxLambdaError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CHAR_MULTIPLIER = 250  # TEI's: an input may have max_input_length × this many characters
DIRECTIONS = {"left": "left", "Left": "left", "right": "right", "Right": "right"}

# TEI's error types and their statuses (router/src/http/server.rs)
STATUS = {"Empty": 400, "Validation": 422, "Tokenizer": 422, "Backend": 424}


class TeiError(OnnxLambdaError):
    """An error with TEI's ``error_type``: ``Validation`` (422) unless told otherwise."""

    type = "InvalidInput"

    def __init__(self, message: str, error_type: str = "Validation") -> None:
        super().__init__(message)
        self.error_type, self.status = error_type, STATUS[error_type]


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
