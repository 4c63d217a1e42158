"""``strict_json.dumps`` splices the text an ``EncodedList`` carries: the body is what the plain
encoder writes for the same payload, in every case (found or not, non-finite values, a string
that holds the splice marker)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from handler import strict_json
from handler.ort.float_text import SMALL, EncodedList
from handler.ort.tensor import as_tensor


def _plain(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"), allow_nan=False)


def _tensor(shape: tuple[int, ...], seed: int = 0) -> Any:
    """An EncodedList of ``shape``, its last dimension × SMALL (its text from the batch
    passes)."""
    *outer, width = shape
    return as_tensor((np.random.default_rng(seed).standard_normal((*outer, width * SMALL)) / 9)
                     .astype(np.float32)).encoded_json()


def _spliced(value: EncodedList) -> EncodedList:
    """The same list with a text no encoder would write: shows that the text was used."""
    value.text = value.text.replace("]", " ]")
    return value


def test_body_is_the_plain_encoding_wherever_the_lists_are() -> None:
    payloads = [
        {"embeddings": _tensor((2, 5)), "dimensions": 5, "tokens": [3, 4]},
        {"model_name": "m", "outputs": [{"name": "a", "data": _tensor((6,)), "shape": [6]},
                                        {"name": "b", "data": _tensor((3,), 1)}]},
        {"outputs": {"y": _tensor((2, 2, 2)), "z": [[1, 2]]}},
        _tensor((4,)),
        {"outputs": {"seq": [_tensor((2,)), _tensor((3,), 2)]}},  # a sequence output
        [[1.5, _tensor((2,))]],  # inside an array of arrays: written as floats, same text
    ]
    for payload in payloads:
        text, written, non_finite = strict_json.dumps(payload)
        assert text == _plain(payload) and written is payload and non_finite == 0


def test_the_carried_text_is_what_goes_out() -> None:
    text, _, _ = strict_json.dumps({"a": {"b": _spliced(_tensor((2,)))}, "c": "]",
                                    "d": [_spliced(_tensor((1,)))]})
    assert text.count(" ]") == 2 and json.loads(text)["c"] == "]"


def test_a_string_holding_the_marker_falls_back_to_the_plain_encoding() -> None:
    payload = {"e": _spliced(_tensor((3,))), "s": strict_json._MARKER}
    text, _, _ = strict_json.dumps(payload)
    assert " ]" not in text and json.loads(text)["s"] == strict_json._MARKER


def test_non_finite_values_are_null_and_counted_in_the_payload_as_written_too() -> None:
    value = as_tensor(np.tile(np.array([1.0, np.nan, -np.inf], np.float32), SMALL)).encoded_json()
    assert isinstance(value, EncodedList)
    text, written, non_finite = strict_json.dumps({"embeddings": value, "n": 1})
    assert text == '{"embeddings":[' + ",".join(["1.0,null,null"] * SMALL) + '],"n":1}'
    assert non_finite == 2 * SMALL
    assert written == {"embeddings": [1.0, None, None] * SMALL, "n": 1}
    assert not any(isinstance(v, float) and not math.isfinite(v)
                   for v in written["embeddings"])


def test_an_object_of_encoded_values_is_written_from_its_text() -> None:
    inner = strict_json.encoded_object({"y": _tensor((2, 1)), "z": _tensor((1,), 1)})
    payload = strict_json.encoded_object({"outputs": inner})
    assert isinstance(payload, strict_json.EncodedDict)
    text, written, non_finite = strict_json.dumps(payload)
    assert text == _plain(payload) and written is payload and non_finite == 0
    payload.text = payload.text.replace("]", " ]")  # the carried text is what goes out
    assert strict_json.dumps(payload)[0] == payload.text


def test_an_object_with_other_values_or_keys_stays_a_plain_dict() -> None:
    for fields in ({"y": _tensor((2,)), "n": [1, 2]}, {1: _tensor((2,))}):
        assert strict_json.encoded_object(fields) is fields


def test_an_encoded_object_with_non_finite_values_is_written_with_nulls() -> None:
    value = as_tensor(np.array([1.5, np.nan], np.float32)).encoded_json()
    payload = strict_json.encoded_object({"outputs": strict_json.encoded_object({"y": value})})
    assert payload.non_finite == 1
    text, written, non_finite = strict_json.dumps(payload)
    assert text == '{"outputs":{"y":[1.5,null]}}' and non_finite == 1
    assert written == {"outputs": {"y": [1.5, None]}}
