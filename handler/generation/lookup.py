"""Prompt-lookup drafts for speculative decoding: where the text being written repeats its input
(a summary quoting its source, an answer citing retrieved passages), the tokens that followed
the latest earlier occurrence of the last few tokens are a cheap guess at what comes next.

The decoder runs the guess with the token in one pass and keeps the guessed tokens as far as the
pass's own greedy choices agree with them: the output is the greedy output, in fewer passes when
the guesses hold (``handler.generation.decoder``). No draft model, no training.
"""

from __future__ import annotations

NGRAMS = (3, 2, 1)  # the longest match first: a longer one predicts better


def draft(tokens: list[int], token: int, count: int) -> list[int]:
    """Up to ``count`` ids that followed the latest earlier occurrence of the last n-gram of
    ``tokens`` + [``token``] (n from 3 down to 1), or [] when none occurs."""
    if count <= 0:
        return []
    sequence = [*tokens, token]
    end = len(sequence)
    for n in NGRAMS:
        if end <= n:
            continue
        tail = sequence[end - n:]
        first = tail[0]
        for start in range(end - n - 1, -1, -1):  # the latest earlier occurrence
            if sequence[start] == first and sequence[start:start + n] == tail:
                return sequence[start + n:start + n + count]
    return []
