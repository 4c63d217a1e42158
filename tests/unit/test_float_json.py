"""Large float32 arrays through yyjson (``handler.ort.float_json``): the same shortest decimals as
``float_text``'s Python passes, the same floats in process, non-finite and small arrays kept on
``float_text`` (the import itself: ``tests/functional/test_float_json_import.py``)."""

from __future__ import annotations

import array
import json
import math
import random
import struct

import pytest

from handler.ort import float_json, float_text
from handler.ort.tensor import Tensor
from handler.strict_json import dumps


def float32s(count: int, seed: int) -> list[float]:
    """Finite float32 values from random bit patterns: every exponent, subnormals included."""
    rng = random.Random(seed)
    raw = array.array("I", [rng.getrandbits(32) for _ in range(count)]).tobytes()
    return [v for v in array.array("f", raw) if math.isfinite(v)]


def test_same_values_as_float_text_on_random_bit_patterns_and_powers_of_two() -> None:
    values = float32s(400_000, seed=7)
    values += [sign * 2.0 ** e for e in range(-149, 128) for sign in (1.0, -1.0)]
    for start in range(0, len(values), 4096):
        chunk = values[start:start + 4096]
        encoded = float_json.encoded(chunk)
        written = [float(t) for t in encoded.text[1:-1].split(",")]
        expected = float_text.shortest(chunk, "float32")
        assert encoded == expected == written
        # each text reads back as the float32 it was written for, signs included (-0.0)
        back = struct.unpack(f"{len(chunk)}f", struct.pack(f"{len(chunk)}f", *written))
        assert [math.copysign(1.0, v) for v in back] == [math.copysign(1.0, v) for v in chunk]
        assert list(back) == chunk


def test_the_tensor_answer_is_the_same_json_value_either_way() -> None:
    values = float32s(400, seed=3)[:384]  # (a few bit patterns are NaN or inf)
    tensor = Tensor("float32", (3, 128), array.array("f", values).tobytes())
    encoded = tensor.encoded_json()
    assert json.loads(encoded.text) == encoded  # the text is the value (notation may differ)
    rows = [float_text.shortest(values[i:i + 128], "float32") for i in range(0, 384, 128)]
    text, _, non_finite = dumps({"y": encoded})
    assert json.loads(text) == {"y": rows} and non_finite == 0
    assert encoded.text in text  # spliced, not re-encoded
    plain = tensor.json()
    assert plain == rows and type(plain) is list  # a caller may change it: no text to go stale


@pytest.mark.parametrize("special", [math.nan, math.inf, -math.inf])
def test_non_finite_values_stay_on_float_text_and_are_counted(special: float) -> None:
    values = [0.5] * 40
    values[7] = special
    encoded = Tensor("float32", (40,), array.array("f", values).tobytes()).encoded_json()
    assert encoded.non_finite == 1
    assert json.loads(encoded.text)[7] is None
