"""The prefix cache: the key/value cache of earlier sequences, kept across requests in one warm
environment, so a prompt that starts like an earlier one (the same system prompt, a chat's
history) prefills only what is new.

After a generation its positions (prompt and answer, all the ids the model read) are kept as one
compact block (``KVCache.snapshot``), keyed by those ids. A new prompt takes the entry sharing
its longest prefix, copies that many positions in (``KVCache.restore``) and runs the rest; at
least its last token always runs, since the first choice needs its logits. The keys and values
of a position depend only on the ids up to it, so the answer is the one a full prefill gives
(the same greedy tokens; the prefill's sums run in another order, so logits may differ in the
last bits).

Bounded by bytes (``ONNX_LAMBDA_PREFIX_CACHE_MB``): the least recently used entries go first,
and an entry that is a prefix of a newer one is dropped (the newer covers it). An entry larger
than the whole budget is not kept.
"""

from __future__ import annotations

from collections import OrderedDict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Entry:
    __slots__ = ("block", "nbytes", "tokens")

    def __init__(self, tokens: tuple[int, ...], block: Any) -> None:
        self.tokens, self.block, self.nbytes = tokens, block, len(block)


class PrefixCache:
    """Entries keyed by their token ids, least recently used first."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, ...], Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, ids: list[int]) -> tuple[Entry | None, int]:
        """The entry sharing the longest prefix with ``ids`` and how many positions to reuse
        (at most ``len(ids) - 1``); (None, 0) when none shares a token."""
        best, reuse, limit = None, 0, len(ids) - 1
        for entry in self._entries.values():
            shared = _common(entry.tokens, ids, limit)
            if shared > reuse:
                best, reuse = entry, shared
        if best is not None:
            self._entries.move_to_end(best.tokens)
        return best, reuse

    def add(self, tokens: tuple[int, ...], block: Any) -> bool:
        """Keep ``block`` (the positions of ``tokens``); False when it exceeds the budget."""
        if not tokens or len(block) > self.budget:
            return False
        for key in [k for k in self._entries if tokens[:len(k)] == k]:
            self._drop(key)  # (the new entry covers it, and the same key is replaced)
        entry = Entry(tokens, block)
        self._entries[tokens] = entry
        self.bytes += entry.nbytes
        while self.bytes > self.budget:
            self._drop(next(iter(self._entries)))
        return True

    def _drop(self, key: tuple[int, ...]) -> None:
        self.bytes -= self._entries.pop(key).nbytes

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0


def _common(a: tuple[int, ...], b: list[int], limit: int) -> int:
    """The length of the common prefix of ``a`` and ``b``, at most ``limit``."""
    n = min(len(a), len(b), limit)
    if a[:n] == tuple(b[:n]):
        return n
    low, high = 0, n  # a[:low] == b[:low] holds, a[:high] == b[:high] does not
    while high - low > 1:
        mid = (low + high) // 2
        if a[:mid] == tuple(b[:mid]):
            low = mid
        else:
            high = mid
    return low
