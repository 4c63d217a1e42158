"""``tensors.outputs_to_json`` writes an answer of small float tensors with one template per
output signature; every other answer takes each output's ``encoded_json``. Both must write the
same text, count the same non-finite values and carry the same floats."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest

from handler import strict_json, tensors
from handler.ort.tensor import Tensor


def tensor(dtype: str, shape: tuple[int, ...], values: list[float]) -> Tensor:
    return Tensor(dtype, shape, struct.pack(f"<{len(values)}{'f' if dtype == 'float32' else 'e'}",
                                            *values))


NAN, INF = float("nan"), float("inf")
CASES: list[dict[str, Tensor]] = [
    {"y": tensor("float32", (1, 2), [0.0, 0.0])},
    {"y": tensor("float32", (1, 2), [0.1234, -5.6789])},
    {"y": tensor("float32", (3,), [1e-45, 3.4e38, 16777217.0])},
    {"a": tensor("float32", (2, 3), [0.5, -0.0, 1e-7, 2.0 ** 87, 1.5, 7.0]),
     "b": tensor("float16", (1, 1, 2), [0.1, 65504.0])},
    {"y": tensor("float32", (1, 3), [NAN, 2.0, -INF])},
    {'100%s "odd" \u00e9': tensor("float32", (1, 1), [0.3])},
    {"%d%%": tensor("float16", (2,), [NAN, 1e-7]), "z": tensor("float32", (1, 2), [1.0, 2.5])},
]


def as_json(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


@pytest.mark.parametrize("outputs", CASES)
def test_template_and_general_answers_agree(outputs: dict[str, Tensor]) -> None:
    fast = tensors.outputs_to_json(outputs)
    general = tensors._outputs_object(outputs)
    assert fast.__class__ is general.__class__ is strict_json.EncodedDict
    assert fast.text == general.text and fast.non_finite == general.non_finite
    assert as_json(fast) == as_json(general)  # the same floats (NaN kept) in the same nesting
    assert strict_json.dumps(fast)[0] == strict_json.dumps(general)[0]
    parsed = json.loads(fast.text)["outputs"]
    assert list(parsed) == list(outputs)


def test_other_outputs_take_the_general_way() -> None:
    """A large, an integer or a non-tensor output: no template (each output's own text)."""
    many = tensor("float32", (1, 30), [i / 7 for i in range(30)])
    ints = Tensor("int64", (2,), struct.pack("<2q", 1, -2))
    for outputs in ({"y": many}, {"y": tensor("float32", (1, 2), [0.5, 1.5]), "i": ints},
                    {"s": [{"a": 0.25}]}):
        answer = tensors.outputs_to_json(outputs)
        assert answer == tensors._outputs_object(outputs)
        text = strict_json.dumps(answer)[0]
        assert json.loads(text) == json.loads(strict_json.dumps(
            tensors._outputs_object(outputs))[0])
    assert not math.isnan(tensors.outputs_to_json({"y": many})["outputs"]["y"][0][0])
