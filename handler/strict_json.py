"""RFC 8259 JSON at both edges of a request.

In: ``NaN``, ``Infinity`` and ``-Infinity`` literals, and numbers that overflow a double to
infinity (``1e400``), are refused: Python's ``json`` accepts all of them, strict clients and
API Gateway's peers do not. Out: a non-finite float (a model's NaN, an FP32 overflow) is
written as ``null`` and counted, so every response parses in JavaScript, Go or ``jq``.
Both checks cost nothing for the common case: the C encoder refuses non-finite floats by
itself, and a float literal can only overflow with a 3-digit exponent or 200+ digits in a row.
Tensors' float arrays arrive as ``EncodedList``s that carry their text (written once, in
bulk, by ``handler.ort.float_text``): the encoder splices it instead of formatting each float;
an answer made only of such arrays is an ``EncodedDict``, whose whole text is written at once.
"""

from __future__ import annotations

import json
import math

from handler.ort.float_text import EncodedList

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# One encoder for every response (json.dumps(..., separators=...) would build one per call),
# and its C half built once too: ``JSONEncoder.encode`` makes a new one (and a closure) per
# call, half the cost of encoding a small response. Same arguments, so the same text.
_STRICT = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_MARKERS: dict[int, Any] = {}  # circular-reference check; cleared when an encode fails midway
escape = json.encoder.encode_basestring_ascii  # a str → its JSON literal, in C
_ENCODE = json.encoder.c_make_encoder(
    _MARKERS, _STRICT.default, escape, None, ":", ",", False, False, False)
# Overflow needs exponent + integer digits > 308: an exponent of 3+ digits, or (exponent <= 99)
# more than 209 digits before it. Folding every digit to 0 and "E"/"+" to "e" ("1E+400" →
# "0ee000") turns both into plain substrings, found at memchr speed (a regular expression
# cost as much as the parse itself; ``needle in bytes`` raises and clears a TypeError inside).
_FOLD = bytes.maketrans(b"123456789E+", b"000000000ee")
_HUGE_EXPONENT, _LONG_DIGITS = b"e000", b"0" * 200


def _refuse(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON (RFC 8259 has no NaN or Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:32]!r} overflows a double")
    return value


# Built once: json.loads(..., parse_constant=...) would build a decoder per call (~10 µs).
_DECODER = json.JSONDecoder(parse_constant=_refuse)
_CHECKED_DECODER = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite)
_SCAN = _DECODER.scan_once
_PLAIN_OPENERS = (b"{", b"[")  # an object or array with no BOM or leading space


def loads(data: bytes) -> Any:
    """A request body → Python values; ValueError (or RecursionError) when it is not strict
    JSON. UTF-8, -16 and -32 are detected as ``json.loads`` does."""
    if data[:1] in _PLAIN_OPENERS and data[1:2] != b"\0":  # detect_encoding's answer: UTF-8
        text = data.decode("utf-8", "surrogatepass")
        try:  # the C scanner straight away; anything but one whole document takes decode()'s
            value, end = _SCAN(text, 0)  # way, for its exact error message
        except Exception:
            end = -1
        if end != len(text):
            value = _DECODER.decode(text)
        folded = data.translate(_FOLD)
    else:
        text = data.decode(json.detect_encoding(data), "surrogatepass")
        value = _DECODER.decode(text)
        folded = text.encode("utf-8", "surrogatepass").translate(_FOLD)
    # (200 digits in a row need at least 200 bytes: a shorter body needs one look only)
    if folded.find(_HUGE_EXPONENT) >= 0 or (len(folded) >= 200
                                            and folded.find(_LONG_DIGITS) >= 0):
        _CHECKED_DECODER.decode(text)  # a number may overflow (rare): check every float
    return value


def check_parsed(value: Any) -> None:
    """ValueError when an already-parsed event (a direct invocation) holds NaN or ±Infinity."""
    try:
        _STRICT.encode(value)
    except ValueError:
        raise ValueError("NaN and Infinity are not JSON (RFC 8259): send finite numbers") from None
    except RecursionError:
        raise ValueError("the event is nested too deeply") from None
    except TypeError:  # not from JSON (an in-process caller's objects): the codecs judge them
        pass


class EncodedDict(dict):  # type: ignore[type-arg]
    """A JSON object that carries its own text, as an ``EncodedList`` does for an array:
    ``dumps`` writes ``text`` (``non_finite`` nulls in it) without walking the object. Made by
    ``encoded_object`` for the handler's own answers, which never change it afterwards."""

    __slots__ = ("non_finite", "text")


def encoded_object(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` as an ``EncodedDict`` when every key is a string and every value carries its
    text (an ``EncodedList`` or ``EncodedDict``); else ``fields`` itself."""
    parts = []
    non_finite = 0
    for key, value in fields.items():
        if value.__class__ not in _ENCODED or key.__class__ is not str:
            return fields
        parts.append(f"{escape(key)}:{value.text}")
        non_finite += value.non_finite
    encoded = EncodedDict(fields)  # (``with_text``'s work: one call fewer on every answer)
    encoded.text, encoded.non_finite = f"{{{','.join(parts)}}}", non_finite
    return encoded


_ENCODED = (EncodedList, EncodedDict)


def with_text(fields: dict[str, Any], text: str, non_finite: int = 0) -> EncodedDict:
    """``fields`` as an ``EncodedDict`` carrying ``text``: exactly what the strict encoder
    writes for them (``non_finite`` of their floats written as null), as its maker ensures."""
    encoded = EncodedDict(fields)
    encoded.text, encoded.non_finite = text, non_finite
    return encoded


def dumps(payload: Any) -> tuple[str, Any, int]:
    """→ (strict JSON text, the payload as written, how many non-finite floats became null)."""
    if payload.__class__ is EncodedDict and not payload.non_finite:
        return payload.text, payload, 0
    found: list[EncodedList] = []
    marked = _marked(payload, found)
    try:
        if found and not any(f.non_finite for f in found):
            parts = _encode(marked, _ENCODE_MARKING).split(_SPLICE)
            if len(parts) == len(found) + 1:  # else a string of the payload holds the marker
                texts = [f.text for f in found]
                return "".join([p for pair in zip(parts, texts, strict=False) for p in pair]
                               + [parts[-1]]), payload, 0
        return _encode(payload), payload, 0
    except ValueError:  # a NaN or ±Infinity somewhere: rebuild with nulls (rare path)
        counter = [0]
        clean = _nulled(payload, counter)
        return _encode(clean), clean, counter[0]


def _encode(payload: Any, encoder: Any = _ENCODE) -> str:
    """``_STRICT.encode(payload)`` (``_ENCODE_MARKING``: the same, ``_MARK`` as ``_MARKER``)."""
    try:
        return "".join(encoder(payload, 0))
    except BaseException:
        _MARKERS.clear()  # what the failed encode left: not a cycle for the next one
        raise


# An EncodedList becomes this marker's JSON string, then its text replaces that string.
_MARK, _MARKER = object(), "\x00onnx-lambda encoded list\x00"


def _marker(value: Any) -> str:
    if value is _MARK:
        return _MARKER
    return json.JSONEncoder.default(_STRICT, value)  # the standard TypeError


# _STRICT's encoder with _marker as its default, its C half built once (as _ENCODE's)
_ENCODE_MARKING = json.encoder.c_make_encoder(
    _MARKERS, _marker, escape, None, ":", ",", False, False, False)
_SPLICE = _STRICT.encode(_MARKER)


_HOLDERS = (dict, EncodedList)  # lists starting with one of these may hold EncodedLists


def _marked(value: Any, found: list[EncodedList]) -> Any:
    """``value`` with each ``EncodedList`` (the value itself, in objects, in lists of objects
    or of them: where responses put tensors) replaced by ``_MARK``; containers copied only where
    one was. Other arrays are not searched (an array of arrays holds numbers), and scalars cost
    no call: this runs on every response."""
    kind = value.__class__
    if kind is EncodedList:
        found.append(value)
        return _MARK
    if kind is dict:
        items: Any = value.items()
    elif kind is list and value and value[0].__class__ in _HOLDERS:
        items = enumerate(value)
    else:
        return value
    copy: Any = None
    for key, item in items:
        held = item.__class__
        if held is EncodedList or held is dict or (
                held is list and item and item[0].__class__ in _HOLDERS):
            new = _marked(item, found)
            if new is not item:
                if copy is None:
                    copy = dict(value) if kind is dict else list(value)
                copy[key] = new
    return value if copy is None else copy


def _nulled(value: Any, counter: list[int]) -> Any:
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        counter[0] += 1
        return None
    if isinstance(value, dict):
        return {k: _nulled(v, counter) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nulled(v, counter) for v in value]
    return value
