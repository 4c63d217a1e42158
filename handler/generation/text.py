"""Tokens → text deltas while they are generated: valid UTF-8 only, stop sequences cut.

``Detokenizer`` decodes a sliding window of the generated ids (the way text-generation-inference
does: the text of ``ids[prefix:]`` minus that of ``ids[prefix:read]``), so a step costs the same
at token 5 and at token 500, a token that ends inside a multi-byte character (a byte-level BPE
splits emoji and accents) adds nothing until the character is whole, and a tokenizer that
strips a leading space at the start of a decode still shows the space between tokens.

``StopText`` holds back the tail of the text that could be the start of a stop sequence, and cuts
the text at the first stop sequence found (the stop sequence itself is not part of the answer).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REPLACEMENT = "\ufffd"  # what decoding an incomplete UTF-8 sequence ends with


class Detokenizer:
    def __init__(self, tokenizer: Any) -> None:
        self.decode = tokenizer.decode
        self.ids: list[int] = []
        self.prefix = self.read = 0

    def add(self, token: int) -> str:
        """The text ``token`` completes ("" while a character is still incomplete)."""
        ids = self.ids
        ids.append(token)
        before = self.decode(ids[self.prefix:self.read], skip_special_tokens=True)
        text = self.decode(ids[self.prefix:], skip_special_tokens=True)
        if len(text) > len(before) and not text.endswith(REPLACEMENT):
            self.prefix, self.read = self.read, len(ids)
            return str(text[len(before):])
        return ""

    def flush(self) -> str:
        """What is still pending at the end (an incomplete character, as U+FFFD)."""
        if self.read == len(self.ids):
            return ""
        before = self.decode(self.ids[self.prefix:self.read], skip_special_tokens=True)
        text = self.decode(self.ids[self.prefix:], skip_special_tokens=True)
        self.prefix = self.read = len(self.ids)
        return str(text[len(before):])


class StopText:
    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = stops
        self.held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """→ (text that can be shown now, whether a stop sequence was reached)."""
        if not self.stops:
            return text, False
        held = self.held + text
        found = [i for i in (held.find(s) for s in self.stops) if i >= 0]
        if found:
            self.held = ""
            return held[:min(found)], True
        keep = 0
        for stop in self.stops:  # the longest tail of held that starts a stop sequence
            for size in range(min(len(stop) - 1, len(held)), keep, -1):
                if held.endswith(stop[:size]):
                    keep = size
                    break
        self.held = held[len(held) - keep:] if keep else ""
        return held[:len(held) - keep], False

    def flush(self) -> str:
        """The held-back tail when generation ends without a stop sequence."""
        held, self.held = self.held, ""
        return held
