"""The JSON documents the tooling writes for itself and reads back (``regions --json``'s
network figures, ``scripts/gpu-check``'s GPU table): each names its ``format``, and a file that is
unreadable, not JSON or of another format is refused with one line saying which."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read(path: Path, format_name: str, error: type[Exception], what: str) -> dict[str, Any]:
    """``path``'s JSON object if its ``format`` is ``format_name``; else ``error`` naming the
    file and ``what`` the document should be (e.g. "written by 'onnx-lambda regions --json'")."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != format_name:
        raise error(f"{path}: not {what} (format {format_name!r})")
    return doc
