"""JSON at both edges of a request: strict reading, and tensors → JSON values → text.

RFC 8259 both ways. In: ``NaN``, ``Infinity`` and ``-Infinity`` literals, and numbers that
overflow a double (``1e400``), are refused (``ValueError``: the codecs answer 400). Out: a
non-finite float (a model's NaN, an FP32 overflow) is written as ``null`` and counted, so every
response parses in JavaScript, Go or ``jq``; float32/float16 values as the shortest decimal that
reads back as the same value (``0.12345679``, not float64's ``0.12345679104328156``).

Who does what, and why:
- Reading is the standard library's ``json`` (its C scanner), which positions its errors ("line
  1 column 5"). yyjson's Python binding (``cyyjson``, py-yyjson 4.0.6, the newest release)
  cannot read request bodies: on x86_64 it decodes every non-ASCII string wrongly (``"é"`` →
  ``"Ã©"``: its ASCII test shifts a signed ``char``; TkTech/py_yyjson#17, open), and turns a
  deeply nested body into a segmentation fault (its conversion to Python objects recurses with
  no limit).
- yyjson finds the digits of large float32 arrays (``SMALL`` values or more, all finite): its
  ``YYJSON_WRITE_FP_TO_FLOAT`` writes each value's shortest float32 decimal in C, read back as
  the floats the answer carries (numbers only: no strings, a tensor's rank deep). Its module is
  imported there, on the first such answer, never at init: its first ``Document`` imports
  ``pathlib`` (≈ 16.6 M instructions under ``python -S``, 9 % of ``digits``' cold init).
- Writing: the handler's own answers are written by yyjson once that import is paid (a large
  float32 answer; so MiniLM's every answer, and never a small model's): ``repr`` of each float
  in ``json`` costs ≈ 2,500 instructions, 4× the whole answer through yyjson (one sentence's
  384 values: 2.1 M against 0.52 M). Before it, for a user pipeline's answer (``Foreign``:
  yyjson's writer recurses on a cycle until the process dies, where ``json`` raises) and for
  what yyjson refuses (a tuple, a subclass of a JSON type, a non-string key), ``json`` writes.
  Either text holds the same values (yyjson writes ``0.00001`` and ``"é"`` where ``json``
  writes ``1e-05`` and ``"\\u00e9"``).
- Everything else in Python, one value at a time (``shortest``): small float32 tensors (a
  classifier's scores, ``linear``'s two outputs: no yyjson import, no ``pathlib``, on their
  first answer), float16 (yyjson has no half-precision writer) and arrays with non-finite
  values.
"""

from __future__ import annotations

import json
import math
import struct
from _json import make_encoder  # json.encoder's c_make_encoder, typed by typeshed

from handler.ort.tensor import Tensor, nest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# -- reading ------------------------------------------------------------------------------------


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
_RAW_DECODE = _DECODER.raw_decode
_PLAIN_OPENERS = (b"{", b"[")  # an object or array with no BOM or leading space
# A number overflows a double only with exponent + integer digits > 308: an exponent of 3+
# digits, or (exponent <= 99) over 209 digits before it. Folding every digit to 0 and "E"/"+"
# to "e" ("1E+400" → "0ee000") turns both into plain substrings found at memchr speed; only a
# body holding one is parsed again with every float checked (``parse_float`` on every number
# would be a Python call per float).
_FOLD = bytes.maketrans(b"123456789E+", b"000000000ee")
_HUGE_EXPONENT, _LONG_DIGITS = b"e000", b"0" * 200


def loads(data: bytes) -> Any:
    """A request body → Python values; ValueError (or RecursionError) when it is not strict
    JSON. UTF-8, -16 and -32 are detected as ``json.loads`` does."""
    if data[:1] in _PLAIN_OPENERS and data[1:2] != b"\0":  # detect_encoding's answer: UTF-8
        # ``raw_decode``, not ``decode()``, which matches leading and trailing whitespace with
        # two regular expressions (≈ 4,000 instructions, 3 % of the tiny model's warm overhead);
        # anything but one whole document takes decode()'s way, for its exact error message.
        text = data.decode("utf-8", "surrogatepass")
        try:
            value, end = _RAW_DECODE(text)
        except ValueError:
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
        _ENCODER.encode(value)
    except ValueError:
        raise ValueError("NaN and Infinity are not JSON (RFC 8259): send finite numbers") from None
    except RecursionError:
        raise ValueError("the event is nested too deeply") from None
    except TypeError:  # not from JSON (an in-process caller's objects): the codecs judge them
        pass


# -- writing ------------------------------------------------------------------------------------

# Built once, not per call. No cycle check: the handler's own answers are trees, and a user
# pipeline's cyclic answer fails anyway (RecursionError instead of ValueError, a 500 either
# way); the check's bookkeeping costs ≈ 3,200 instructions a response (2.5 % of the tiny
# model's warm overhead).
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)
# Kept by the 1 % rule: ``JSONEncoder.encode`` builds its C half (and a closure) on every call;
# built once here with the same arguments (so the same text) it saves ≈ 6,900 instructions a
# response, 5 % of the tiny model's warm overhead (callgrind, Python 3.11). ``c_make_encoder``
# is the standard library's own C encoder (``_json.make_encoder``), unchanged in 3.12 and 3.13.
_C_ENCODE = make_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",",
    False, False, False)


def _json_text(payload: Any) -> str:
    """``_ENCODER.encode(payload)``, without building the encoder per call."""
    return "".join(_C_ENCODE(payload, 0))


class Foreign:
    """A user pipeline's answer, which ``json`` writes: any object, a cycle included (an error,
    never a crash)."""

    __slots__ = ("payload",)

    def __init__(self, payload: Any) -> None:
        self.payload = payload


def dumps(payload: Any) -> tuple[str, Any, int]:
    """→ (strict JSON text, the payload as written, how many non-finite floats became null)."""
    write = _json_text if _document is None else _yyjson_text
    if payload.__class__ is Foreign:
        payload, write = payload.payload, _json_text
    try:
        return write(payload), payload, 0
    except ValueError:  # a NaN or ±Infinity somewhere (rare): written again, with nulls
        counter = [0]
        clean = _nulled(payload, counter)
        return write(clean), clean, counter[0]


def _yyjson_text(payload: Any) -> str:
    """The handler's own answer through yyjson (loaded: see above); ValueError where it holds
    NaN or ±Infinity."""
    try:
        text: str = _document(payload).dumps()
        return text
    except (TypeError, SystemError, UnicodeEncodeError):  # what its writer does not take (a
        return _json_text(payload)  # tuple, a subclass, a non-string key): json's


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


# -- tensors → JSON values ----------------------------------------------------------------------

# Fewer float32 values than this go one by one: a first yyjson answer costs its import and
# pathlib's (≈ 16.6 M instructions), and a call ≈ 10,000 of fixed work (``bench.json_floats``).
SMALL = 24
_FP_TO_FLOAT = 1 << 27  # YYJSON_WRITE_FP_TO_FLOAT (yyjson.h; the binding passes flags as is)


class _Spec:
    """How one float type's shortest decimals are found (``shortest``)."""

    __slots__ = ("exceptions", "fewest", "first", "last", "pack", "tiny", "unpack", "whole")

    def __init__(self, code: str, digits: tuple[int, int, int], tiny: float, whole: float,
                 exceptions: dict[float, str]) -> None:
        packer = struct.Struct(code)
        self.pack, self.unpack = packer.pack, packer.unpack
        # a normal value's fewest digits, those tried first, and those that always read back
        self.fewest, self.first, self.last = digits
        self.tiny, self.whole = tiny, whole  # smallest normal value; 2 ** (mantissa bits + 1)
        self.exceptions = {sign * value: sign * float(text)
                           for value, text in exceptions.items() for sign in (1.0, -1.0)}


# Which digits a normal value needs. A shortest decimal of ``fewest`` digits or less is the
# nearest decimal of ``fewest`` digits (one step of it is wider than the value's whole rounding
# interval: at most one such decimal lies in it; %g drops the trailing zeros), and ``last``
# digits always read back. float32 tries 7 first (its commonest lengths are 7 and 8): a value
# that passes with 7 can pass with 6 only if its 7th digit is 1 or 9 — with 2..8 the nearest
# 6-digit decimal is at least 1.5 7-digit steps away, and half an ulp is under 0.6 of one
# (ulp / step = 0.119 * s / m, for the decimal significand s and the binary one m); the test
# that rule saves is ≈ 3,800 instructions a value (a classifier's few scores, ``digits``).
# At a power of two the float below is half as far as the one above, so the nearest decimal of
# a length can miss below while another of that length reads back: the exceptions, every such
# case of either type (tests/unit/test_json_codec.py checks every power of two against numpy).
_SPECS = {
    "float32": _Spec("f", (6, 7, 9), 1.1754943508222875e-38, 2.0 ** 24,
                     {2.0 ** -96: "1.2621775e-29", 2.0 ** 87: "1.5474251e+26",
                      2.0 ** 90: "1.2379401e+27"}),
    "float16": _Spec("e", (3, 3, 5), 6.103515625e-05, 2.0 ** 11, {2.0 ** -6: "0.01563"}),
}
_FORMATS = [f"%.{digits}g" for digits in range(10)]  # (a "*" precision costs a tuple)


def shortest(values: list[float], dtype: str) -> list[float]:
    """float32/float16 values (widened to Python floats) → the floats of their shortest decimals
    that read back as the same float32/float16 value, which ``repr`` (and so any JSON encoder)
    writes; NaN and ±inf as they are."""
    spec = _SPECS[dtype]
    fewest, first, last, tiny, whole = spec.fewest, spec.first, spec.last, spec.tiny, spec.whole
    pack, unpack = spec.pack, spec.unpack
    found = []
    for value in values:
        if (value.is_integer() and -whole < value < whole) or value - value != 0.0:
            found.append(value)  # an integer's digits are its text ("-0.0" too); NaN, ±inf
            continue
        if value >= tiny or value <= -tiny:
            digits = first
            text = _FORMATS[first] % value
            candidate = float(text)
            if unpack(pack(candidate))[0] == value:
                # fewer digits only after all of them were written and the last is 1 or 9,
                # or an exponent (whose last character is none of ours)
                if fewest < first and ((len(text) > first and text[-1] in "19") or "e" in text):
                    fewer = float(_FORMATS[fewest] % value)
                    if unpack(pack(fewer))[0] == value:
                        candidate = fewer
                found.append(candidate)
                continue
        else:
            digits = 0  # a subnormal: coarser than normal values, from one digit up
        while True:
            digits += 1
            candidate = float(_FORMATS[digits] % value)
            if digits == last:  # always reads back; a power of two may have a shorter text
                candidate = spec.exceptions.get(value, candidate)
                break
            if unpack(pack(candidate))[0] == value:
                break
        found.append(candidate)
    return found


# yyjson's ``Document``, once the first large float32 array has imported it (``_yyjson``)
_document: Any = None


def _yyjson() -> Any:
    global _document
    # large float32 arrays only: see the module's docstring (the layer ships this C module
    # without the yyjson package, whose typing stubs it would carry)
    from cyyjson import Document  # type: ignore[import-not-found,unused-ignore]

    _document = Document
    return Document


def tensor_values(tensor: Tensor) -> Any:
    """A tensor → JSON-ready values, nested like ``tolist``: float32/float16 as ``shortest``
    writes them (NaN and ±inf stay floats: ``dumps`` writes them as null and counts them)."""
    dtype = tensor.dtype
    if dtype not in _SPECS:
        return tensor.tolist()
    if dtype == "float32" and tensor.size >= SMALL:
        document = _document or _yyjson()
        try:
            return document(document(tensor.tolist()).dumps(flags=_FP_TO_FLOAT)).as_obj
        except ValueError:  # NaN or ±inf in it (yyjson refuses them): one by one, counted later
            pass
    return nest(shortest(tensor.flat(), dtype), tensor.shape)
