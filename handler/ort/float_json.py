"""Large float32 arrays' JSON in one C call: yyjson's float32 writer, then its reader.

``YYJSON_WRITE_FP_TO_FLOAT`` writes each double (here always a float32's exact value) as the
shortest decimal that reads back as the same float32, the text ``handler.ort.float_text`` finds
in Python passes; reading that text back gives the floats it stands for, which the in-process
answer carries. Tested equal to ``float_text`` on 400,000 random float32 bit patterns and every
power of two (``tests/unit/test_float_json.py``). Only the notation may differ: yyjson writes
``0.00001`` and ``100000000000000000000.0`` where ``repr`` writes ``1e-05`` and ``1e+20``.

Why a C library here and not for the rest: on MiniLM's batch of 8 (3,072 values) the body takes
0.18× the instructions of the standard encoder's float64 ``repr`` (0.15× its time), where
``float_text`` takes 1.20× (README, "MiniLM's JSON response"), with the same bytes. Its C
module ``cyyjson`` is imported on the first array that needs it, not at init, so small
outputs (under ``float_text.SMALL`` values: a classifier's logits, a scalar, ``digits``) never
pay for it. That
first array costs ≈ 18 M instructions once per environment (callgrind, ``decimal`` preloaded as
awslambdaric's bootstrap does): the module itself ≈ 0.4 M, and the binding's first ``Document``
imports ``pathlib`` (≈ 16 M); each later one of 384 values ≈ 0.4 M against ≈ 3.7 M in
``float_text``, so it is repaid by the sixth such answer. Non-finite values go to
``float_text``: yyjson would refuse them or write ``null`` without counting.
"""

from __future__ import annotations

from handler.ort.float_text import EncodedList

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FP_TO_FLOAT = 1 << 27  # YYJSON_WRITE_FP_TO_FLOAT (yyjson.h 0.10; py yyjson passes flags as is)


def encoded(nested: list[Any]) -> EncodedList:
    """Finite float32 values (nested lists of floats) → an ``EncodedList`` of the floats their
    shortest text reads as, carrying that text."""
    from cyyjson import Document  # on the first large array only: see the docstring

    text = Document(nested).dumps(flags=_FP_TO_FLOAT)
    value = EncodedList(Document(text).as_obj)
    value.text, value.non_finite = text, 0
    return value
