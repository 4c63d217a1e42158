"""float32/float16 values as the shortest decimal text that reads back as the same value.

Standard library only, and C-level throughout: every pass formats a whole batch with one bytes
``%`` (twice as fast as ``str``'s), parses it back with ``map(float)`` and checks it with one
``struct`` round trip and ``map(operator.eq)``; values are split and merged with
``itertools.compress`` and ``list.__setitem__`` mapped over indices, no per-value Python
loop. The exceptions go one by one (``one_by_one``): batches under ``SMALL`` values, where the
passes' fixed cost dominates, and the rare NaN/±inf and subnormals. What it costs and where
the floor is: the README's "MiniLM's JSON response".

Which digits a normal float32 needs: a shortest decimal of 6 digits or fewer is the nearest
6-digit decimal (6-digit steps are wider than an ulp, so at most one lies within half an ulp of
the value; ``%g`` drops the trailing zeros), and 9 digits always read back. The first pass
writes 7 (the commonest answers are 7 and 8): a value that fails with 7 fails with fewer, so it
goes on to 8 (then 9, unchecked); a value that passes with 7 can pass with 6 only if its 7th
digit is 1 or 9 — with 2..8 the nearest 6-digit decimal is at least 1.5 7-digit steps away, and
half an ulp is under 0.6 of one (ulp / step = 0.119 * s / m, for the decimal significand s and
the binary one m). Powers of two, where the float below is half as far as the one above, are
the exceptions to "nearest"; the few that matter are listed (``_NOT_NEAREST``).
"""

from __future__ import annotations

import struct
from itertools import compress
from math import isfinite
from operator import eq, itemgetter, not_

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class EncodedList(list):  # type: ignore[type-arg]
    """A list of floats that carries its own JSON text (``text``, exactly what the standard
    encoder writes for the list, with ``null`` for each of its ``non_finite`` values):
    ``strict_json.dumps`` splices the text instead of formatting every float again. Any other
    encoder sees a plain list. Made by ``Tensor.encoded_json()`` for the handler's own codecs
    and pipelines, which never change it: the text does not follow changes."""

    __slots__ = ("non_finite", "text")


# dtype → (struct format, fewest digits a normal value's check starts from, the first pass,
# the count that always round-trips, the smallest normal value, and what the first pass writes
# for every value under 1e-29 / 1e-4, subnormals included; NaN and inf write an "n")
_SPECS = {"float32": ("f", 6, 7, 9, 1.1754943508222875e-38, (b"n", b"e-3", b"e-4")),
          "float16": ("e", 3, 3, 5, 6.103515625e-05, (b"n", b"e-0"))}
# At a power of two the float below is half as far as the one above, so the nearest decimal of
# a length can miss below while one above reads back: every such case of either type
# (tests/unit/test_float_text.py checks every power of two, and every float16, against numpy).
_NOT_NEAREST = {"float32": {2.0 ** -96: "1.2621775e-29", 2.0 ** 87: "1.5474251e+26",
                            2.0 ** 90: "1.2379401e+27"},
                "float16": {2.0 ** -6: "0.01563"}}
_EXCEPTIONS = {dtype: {sign * value: (sign * float(text), repr(sign * float(text)).encode())
                       for value, text in table.items() for sign in (1.0, -1.0)}
               for dtype, table in _NOT_NEAREST.items()}
_FORMAT = {digits: b"%%.%dg," % digits for digits in range(1, 10)}
_ONE_VALUE = {digits: b"%%.%dg" % digits for digits in range(1, 10)}  # (no "*": no tuple)
_STRUCTS = {dtype: struct.Struct(spec[0]) for dtype, spec in _SPECS.items()}
# Fewer values than this go one by one: the batch passes cost ~100 K instructions of fixed work
# (splits, compresses, scatters) and ~8.7 K a value, the loop ~7 K and ~13 K a value (callgrind:
# 2 values 33 K vs 110 K, 10 values 135 K vs 198 K; even at ~23); classifiers' and scalar
# models' answers are the common small case.
SMALL = 24
_ONE_OR_NINE = frozenset(b"19")
_E = ord("e")  # ``b"e" in text`` raises and clears a TypeError inside: an int needle does not
# Below 2 ** (mantissa bits + 1) every integer is a value of the type: its digits are its text.
_WHOLE = {"float32": 2.0 ** 24, "float16": 2.0 ** 11}
# what ``one_by_one`` reads, in one look-up: its fixed cost is most of a small tensor's
_ONE = {dtype: (fewest, first, last, tiny, 10.0 ** fewest, _WHOLE[dtype], _EXCEPTIONS[dtype],
                _STRUCTS[dtype].pack, _STRUCTS[dtype].unpack, _ONE_VALUE[first])
        for dtype, (_, fewest, first, last, tiny, _) in _SPECS.items()}


def supports(dtype: str) -> bool:
    return dtype in _SPECS


def texts(values: list[float], dtype: str) -> tuple[list[bytes], list[float], int]:
    """→ (each value's shortest text, ``b"null"`` where not finite; the floats those texts
    read as, NaN and ±inf kept; how many were not finite)."""
    if len(values) < SMALL:
        return one_by_one(values, dtype)
    _, _, first, _, tiny, marks = _SPECS[dtype]
    blob = _format(values, first)
    if not any(mark in blob for mark in marks) or (  # memchr speed, and a precise look after
            isfinite(sum(values)) and min(filter(None, map(abs, values)), default=tiny) >= tiny):
        found = _normal(values, dtype, blob)  # the common case: finite, no subnormals
        non_finite = 0
    else:  # rare: NaN/±inf (null) and subnormals (coarser than normal values) go one by one
        found = [b"null"] * len(values), list(values)
        usual = [isfinite(v) and not 0 < abs(v) < tiny for v in values]
        regular = list(compress(range(len(values)), usual))
        subset = [values[i] for i in regular]
        _scatter(found, regular, _normal(subset, dtype, _format(subset, first)))
        others = list(compress(range(len(values)), map(not_, usual)))
        *written, non_finite = one_by_one([values[i] for i in others], dtype)
        _scatter(found, others, written)
    return found[0], found[1], non_finite


def shortest(values: list[float], dtype: str) -> list[float]:
    """Each float32/float16 value (widened to a Python float) → the float of its shortest
    round-tripping decimal, so that ``repr`` (and any JSON encoder) writes that decimal."""
    return texts(values, dtype)[1]


def one_by_one(values: list[float], dtype: str) -> tuple[list[bytes], list[float], int]:
    """``texts`` for a few values, each as the batch passes decide it (``_normal``): from the
    first pass's digits, one fewer only after a 1 or 9, more only after a miss; integral values
    under 2 ** mantissa bits are their own shortest text; subnormals from one digit up."""
    fewest, first, last, tiny, fixed_below, whole, exceptions, pack, unpack, at_first = _ONE[dtype]
    found: list[bytes] = []
    floats: list[float] = []
    non_finite = 0
    for value in values:
        if value in exceptions:
            candidate, text = exceptions[value]
        elif value - value != 0.0:  # NaN or ±inf (inf - inf is NaN)
            found.append(b"null")
            floats.append(value)
            non_finite += 1
            continue
        elif value.is_integer() and -whole < value < whole:  # every integer there is a value
            candidate, text = value, b"%.1f" % value  # repr's text ("-0.0" too), in fewer steps
        elif value >= tiny or value <= -tiny:
            text = at_first % value
            candidate = float(text)
            if unpack(pack(candidate))[0] == value:
                # one digit fewer can read back only where the first pass wrote all its digits
                # and the last is 1 or 9, or wrote an exponent (whose last byte is no digit)
                if fewest < first and ((text[-1] in _ONE_OR_NINE and len(text) > first)
                                       or _E in text):
                    shorter = _ONE_VALUE[fewest] % value
                    fewer = float(shorter)
                    if unpack(pack(fewer))[0] == value:
                        text, candidate = shorter, fewer
            else:
                text, candidate = _reading_back(value, first + 1, last, pack, unpack)
            # %g and repr differ on large values and on integral ones (see _as_repr); here an
            # integral candidate is a value of at least ``whole`` (one under it reads back
            # only as itself, an integer, which took the branch above): large too
            if not -fixed_below < candidate < fixed_below:
                text = repr(candidate).encode()
        else:  # a subnormal: coarser than normal values, tried from one digit up
            text, candidate = _reading_back(value, 1, last, pack, unpack)
        found.append(text)
        floats.append(candidate)
    return found, floats, non_finite


def _reading_back(value: float, digits: int, last: int, pack: Any,
                  unpack: Any) -> tuple[bytes, float]:
    """The text of ``value`` at the fewest of ``digits``..``last`` significant digits that reads
    back as it (``last`` always does), and the float it reads as."""
    text = _ONE_VALUE[digits] % value
    candidate = float(text)
    while digits < last and unpack(pack(candidate))[0] != value:
        digits += 1
        text = _ONE_VALUE[digits] % value
        candidate = float(text)
    return text, candidate


def _normal(values: list[float], dtype: str, blob: bytes) -> tuple[list[bytes], list[float]]:
    """Finite values, zero or normal, and their ``_format`` at the first pass's digits → their
    texts and floats, written as ``repr`` would."""
    fmt, fewest, first, last, _, _ = _SPECS[dtype]
    if not values:
        return [], []
    out = _check(values, blob, fmt)
    ok = out[2]
    if fewest < first:  # one digit fewer, for the values that passed and end in 1 or 9
        indices, subset = list(compress(range(len(values)), ok)), list(compress(values, ok))
        if _E not in blob:  # (an exponent's last byte is no digit of ours: try them all)
            maybe = list(map(_ONE_OR_NINE.__contains__, map(itemgetter(-1), compress(out[0], ok))))
            indices, subset = list(compress(indices, maybe)), list(compress(subset, maybe))
        if indices:
            _keep(out, indices, _check(subset, _format(subset, first - 1), fmt))
    missed = list(map(not_, ok))
    pending, subset = list(compress(range(len(values)), missed)), list(compress(values, missed))
    for digits in range(first + 1, last + 1):
        if not pending:
            break
        if digits == last:  # always reads back; a power of two may have a shorter text
            text = _format(subset, digits).split(b",")[:-1]
            _scatter(out, pending, (text, list(map(float, text))))
            exceptions = _EXCEPTIONS[dtype]
            if not exceptions.keys().isdisjoint(subset):
                for i, v in zip(pending, subset, strict=True):
                    if v in exceptions:
                        out[1][i], out[0][i] = exceptions[v]
            break
        found = _check(subset, _format(subset, digits), fmt)
        _keep(out, pending, found)
        missed = list(map(not_, found[2]))
        pending, subset = list(compress(pending, missed)), list(compress(subset, missed))
    _as_repr(out[0], out[1], 10.0 ** fewest)
    return out[0], out[1]


def _format(values: list[float], digits: int) -> bytes:
    """``b"v1,v2,...,"``: every value's nearest ``digits``-digit decimal, in one ``%``."""
    return _FORMAT[digits] * len(values) % tuple(values)


def _check(values: list[float], blob: bytes, fmt: str) -> tuple[list[bytes], list[float],
                                                                 list[bool]]:
    """``_format``'s texts, their floats, and whether each reads back as its value."""
    text = blob.split(b",")
    text.pop()
    floats = list(map(float, text))
    count = len(values)
    back = struct.unpack(f"<{count}{fmt}", struct.pack(f"<{count}{fmt}", *floats))
    return text, floats, list(map(eq, back, values))


def _keep(out: tuple[list[bytes], list[float], list[bool]], indices: list[int],
          found: tuple[list[bytes], list[float], list[bool]]) -> None:
    """Where ``found`` reads back, its text and float replace ``out``'s at those indices."""
    ok = found[2]
    _scatter(out, list(compress(indices, ok)),
             (list(compress(found[0], ok)), list(compress(found[1], ok))))


def _scatter(out: tuple[Any, ...], indices: list[int], new: tuple[Any, ...]) -> None:
    """``out[k][i] = new[k][j]`` for the j-th index i, in C (``any`` drains the map of Nones)."""
    for target, values in zip(out, new, strict=False):
        any(map(target.__setitem__, indices, values))


def _as_repr(texts_: list[bytes], floats: list[float], fixed_below: float) -> None:
    """``%g`` and ``repr`` differ on integral values ("1" vs "1.0": a JSON reader would see an
    int) and on large ones ("1.5e+07" vs "15000000.0"): those take ``repr``'s text."""
    high, low = max(floats), min(floats)
    if high >= fixed_below or low <= -fixed_below:  # rare: look at each
        hits: Any = [i for i, v in enumerate(floats) if v.is_integer() or abs(v) >= fixed_below]
    elif low > -1.0 and high < 1.0:  # only zeros are integral there (often none: one scan)
        hits = compress(range(len(floats)), map(not_, floats)) if 0.0 in floats else ()
    else:
        hits = compress(range(len(floats)), map(float.is_integer, floats))
    for i in hits:
        texts_[i] = repr(floats[i]).encode()
