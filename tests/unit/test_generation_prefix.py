"""The prefix cache's bookkeeping (longest shared prefix, least recently used out, a byte
budget, entries a newer one covers dropped) and prompt-lookup drafts."""

from __future__ import annotations

from handler.generation.lookup import draft
from handler.generation.prefix import PrefixCache


def block(size: int) -> bytes:
    return bytes(size)


def test_find_takes_the_longest_shared_prefix_and_leaves_one_token_to_run() -> None:
    cache = PrefixCache(1000)
    cache.add((1, 2, 3, 4), block(40))
    cache.add((1, 2, 9), block(30))
    entry, reused = cache.find([1, 2, 3, 7])
    assert entry is not None and entry.tokens == (1, 2, 3, 4) and reused == 3
    entry, reused = cache.find([1, 2, 3, 4])  # the whole prompt held: its last token runs
    assert entry is not None and reused == 3
    assert cache.find([5, 6]) == (None, 0)


def test_least_recently_used_goes_first_within_the_budget() -> None:
    cache = PrefixCache(100)
    cache.add((1,), block(40))
    cache.add((2,), block(40))
    cache.find([1, 0])  # (1,) used: (2,) is now the oldest
    cache.add((3,), block(40))
    assert cache.bytes == 80 and len(cache) == 2
    assert cache.find([2, 0]) == (None, 0)
    assert cache.find([1, 0])[1] == 1 and cache.find([3, 0])[1] == 1


def test_an_entry_a_newer_one_covers_is_dropped_and_one_too_big_is_refused() -> None:
    cache = PrefixCache(100)
    cache.add((1, 2), block(20))
    cache.add((1, 2, 3), block(30))
    assert len(cache) == 1 and cache.bytes == 30
    assert not cache.add((4,), block(101))
    assert len(cache) == 1
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_draft_copies_what_followed_the_latest_occurrence() -> None:
    tokens = [5, 6, 7, 8, 9, 1, 5, 6, 7, 2, 3]
    assert draft(tokens, 6, 3) == [7, 2, 3]  # no (2, 3, 6) nor (3, 6) before: the latest 6
    assert draft([1, 2, 3, 4, 1, 2], 3, 2) == [4, 1]  # the trigram (1, 2, 3)
    assert draft([1, 2, 3], 9, 4) == []  # 9 never occurred
    assert draft([1, 2, 3, 1], 2, 0) == []
