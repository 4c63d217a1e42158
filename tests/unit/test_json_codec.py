"""``handler.json_codec`` as a client sees it: every response parses, float32/float16 values come
back exactly, each written as its shortest decimal (numpy's Dragon4 ``unique=True`` is the
oracle: the handler itself never imports numpy), non-finite values as ``null`` and counted, and
request bodies are read strictly (what a client then sees: tests/functional/test_handler_hostile
.py and test_handler_exact.py). Which decimal is written is compared, not its notation: json
writes ``1e-05`` where yyjson, once loaded, writes ``0.00001``."""

from __future__ import annotations

import json
import math
import re
import sys
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from handler.json_codec import (
    SMALL,
    Foreign,
    check_parsed,
    dumps,
    loads,
    shortest,
    tensor_values,
)
from handler.ort.tensor import as_tensor

NUMBER = re.compile(r"-?\d[\d.e+-]*|null")


def _decimal(text: str) -> Any:
    """A written number as the decimal it stands for (sign, digits, exponent), whatever its
    notation; ``null`` as None."""
    return None if text == "null" else Decimal(text).normalize().as_tuple()


def _oracle(array: np.ndarray) -> list[Any]:
    """numpy's shortest decimal of each value."""
    return [_decimal(np.format_float_positional(v, unique=True)) if np.isfinite(v) else None
            for v in array.ravel()]


def _body(array: np.ndarray) -> tuple[str, int]:
    """The response text of one output holding ``array``, and how many nulls it counted."""
    text, _, non_finite = dumps({"outputs": {"y": tensor_values(as_tensor(array))}})
    return text, non_finite


def _written(array: np.ndarray) -> list[Any]:
    """Each number of ``array``'s response text, as the decimal it stands for."""
    return [_decimal(token) for token in NUMBER.findall(_body(array)[0])]


def test_every_float16_small_and_large() -> None:
    every = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    assert _written(every) == _oracle(every)
    for start in range(0, every.size, 4099):  # a few values at a time, as small answers are
        part = every[start:start + SMALL - 1]
        assert _written(part) == _oracle(part)


def test_float32_powers_of_two_and_their_neighbours() -> None:
    powers = np.array([2.0 ** k for k in range(-149, 128)], np.float32)
    up, down = np.nextafter(powers, np.float32(np.inf)), np.nextafter(powers, np.float32(0))
    values = np.concatenate([powers, up[np.isfinite(up)], down, -powers])
    assert _written(values) == _oracle(values)  # large: yyjson
    for start in range(0, values.size, SMALL - 1):  # small: one by one
        part = values[start:start + SMALL - 1]
        assert _written(part) == _oracle(part)


@pytest.mark.parametrize("scale", ["bits", "embedding", "large"])
def test_random_float32_either_way(scale: str) -> None:
    rng = np.random.default_rng(7)
    values = {"bits": lambda: rng.integers(0, 2 ** 32, 20000, dtype=np.uint64)
              .astype(np.uint32).view(np.float32),  # every exponent; NaN, inf, subnormals too
              "embedding": lambda: (rng.standard_normal(20000) * 0.05).astype(np.float32),
              "large": lambda: rng.uniform(-2e7, 2e7, 5000).astype(np.float32)}[scale]()
    finite = values[np.isfinite(values)]
    assert _written(finite) == _oracle(finite)  # yyjson's writer
    assert _written(values) == _oracle(values)  # (with NaN and inf: one by one)
    with np.errstate(invalid="ignore"):  # signalling NaNs among the random bit patterns
        kept = shortest(values.astype(np.float64).tolist(), "float32")
    assert [_decimal(repr(v)) if math.isfinite(v) else None for v in kept] == _oracle(values)


def test_integral_and_signed_zero_values_are_written_as_floats() -> None:
    values = np.array([0.0, -0.0, 1.0, -3.0, 1e6, 16777216.0, 3e38, 0.5], np.float32)
    for array in (values, np.tile(values, 4)):  # 32 values: yyjson's way too
        text = _body(array)[0]
        read = json.loads(text)["outputs"]["y"]
        assert read == [0.0, -0.0, 1.0, -3.0, 1e6, 16777216.0, 3e38, 0.5] * (array.size // 8)
        assert all(type(v) is float for v in read)  # "1.0", not "1": JSON readers keep floats
        assert [math.copysign(1.0, v) for v in read[:2]] == [1.0, -1.0]


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1, 2), (30,), (3, 9), (2, 3, 4),
                                   (1, 1, 24, 1), (8, 384)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int64", "bool"])
def test_values_are_nested_like_tolist_and_read_back_exactly(shape: tuple[int, ...],
                                                             dtype: str) -> None:
    array = (np.random.default_rng(3).standard_normal(shape) * 30).astype(dtype)
    array.reshape(-1)[::4] = 0
    text, non_finite = _body(array)
    back = np.array(json.loads(text)["outputs"]["y"], dtype)
    assert back.shape == array.shape and back.tobytes() == array.tobytes()
    assert non_finite == 0


def test_float32_text_is_shorter_than_float64_text() -> None:
    array = np.random.default_rng(2).standard_normal((4, 96)).astype(np.float32)
    assert len(_body(array)[0]) < 0.7 * len(json.dumps(array.tolist()))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("repeat", [1, SMALL])
def test_non_finite_values_are_null_and_counted(dtype: str, repeat: int) -> None:
    array = np.tile(np.array([[1.5, np.nan], [np.inf, -np.inf], [0.25, 2.0]], dtype),
                    (repeat, 1))
    text, written, non_finite = dumps({"y": tensor_values(as_tensor(array)), "n": 1})
    assert text == '{"y":[' + ",".join(["[1.5,null],[null,null],[0.25,2.0]"] * repeat) + '],"n":1}'
    assert non_finite == 3 * repeat
    assert written == {"y": [[1.5, None], [None, None], [0.25, 2.0]] * repeat, "n": 1}


def test_a_payload_without_non_finite_values_is_written_as_it_is() -> None:
    payload = {"a": [1, 2.5, "é", None, True], "b": {"c": (1, 2)}}
    text, written, non_finite = dumps(payload)
    assert json.loads(text) == {"a": [1, 2.5, "é", None, True], "b": {"c": [1, 2]}}
    assert written is payload and non_finite == 0


def test_a_user_pipelines_unencodable_answer_raises_even_once_yyjson_is_loaded() -> None:
    tensor_values(as_tensor(np.zeros(SMALL, np.float32)))  # a large array: yyjson is loaded
    assert "cyyjson" in sys.modules
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps(Foreign({"score": object()}))
    cycle: list[Any] = []
    cycle.append(cycle)  # a user pipeline's bug: an error (a 500), never a crash
    with pytest.raises((ValueError, RecursionError)):
        dumps(Foreign(cycle))
    text, written, non_finite = dumps(Foreign((1.5, math.inf)))
    assert (text, written, non_finite) == ("[1.5,null]", [1.5, None], 1)


@settings(max_examples=60, deadline=None)
@given(arrays(st.sampled_from([np.float32, np.float16]), array_shapes(max_dims=3, max_side=40),
              elements={"allow_nan": True, "allow_infinity": True, "allow_subnormal": True}))
def test_any_float_array_round_trips(array: np.ndarray) -> None:
    text, non_finite = _body(array)
    loads(text.encode())  # strict JSON
    written = NUMBER.findall(text)
    assert [_decimal(t) for t in written] == _oracle(array)
    assert non_finite == written.count("null")
    back = np.array([float(t) for t in written if t != "null"], array.dtype)
    assert back.tobytes() == array[np.isfinite(array)].tobytes()  # (-0.0 too)


def test_once_yyjson_writes_the_handlers_answers_the_text_holds_what_json_would() -> None:
    tensor_values(as_tensor(np.zeros(SMALL, np.float32)))  # a large array: yyjson is loaded
    assert "cyyjson" in sys.modules
    fields = {"embeddings": [[0.1, -2.5e-07, 1e+20]], "dimensions": 3, "tokens": [2**70],
              "label": "é \" \n", "ok": True, "none": None}
    text, written, non_finite = dumps(fields)
    assert json.loads(text) == fields and written is fields and non_finite == 0
    assert '"é' in text  # yyjson's text (json's would be "\u00e9"); a user pipeline's is json's
    assert dumps(Foreign(fields))[0] == json.dumps(fields, separators=(",", ":"))
    fields["embeddings"][0].append(math.nan)  # its refusal of NaN: nulls, counted
    text, written, non_finite = dumps(fields)
    assert json.loads(text)["embeddings"] == [[0.1, -2.5e-07, 1e+20, None]] and non_finite == 1
    # what its writer does not take goes to json: a tuple, a subclass, a non-string key, a
    # string that UTF-8 cannot hold
    for odd in ({"t": (1, 2)}, {1: "a"}, {"b": [True], "c": OddDict(a=1)},
                {"s": "\ud800"}):
        assert dumps(odd)[0] == json.dumps(odd, separators=(",", ":"))


class OddDict(dict):  # type: ignore[type-arg]
    """A subclass of a JSON type (yyjson's writer takes the exact types only)."""


# -- reading --------------------------------------------------------------------------------

REFUSED = {"NaN": "NaN is not JSON", "Infinity": "Infinity is not JSON",
           "-Infinity": "-Infinity is not JSON", "1e400": "overflows a double",
           "-1e400": "overflows a double", "1E+0400": "overflows a double",
           "1" + "0" * 400 + ".5": "overflows a double",
           "1" + "0" * 250 + "e99": "overflows a double"}


@pytest.mark.parametrize("literal", REFUSED, ids=[x[:12] for x in REFUSED])
def test_non_finite_and_overflowing_numbers_are_refused(literal: str) -> None:
    for body in (f"[[{literal}, 1]]", f'{{"inputs": [{literal}]}}', f" [{literal}]"):
        with pytest.raises(ValueError, match=REFUSED[literal]):
            loads(body.encode())


def test_big_but_finite_numbers_and_lookalike_text_are_read() -> None:
    tiny, long_fraction = "0." + "0" * 99 + "1e+100", "0." + "1" * 300
    body = f'[{tiny}, {long_fraction}, 1e-400, 1e308, "e123 {"9" * 250}", {"1" * 400}]'
    value = loads(body.encode())
    assert value[:4] == [1.0, 0.1111111111111111, 0.0, 1e308]
    assert value[5] == int("1" * 400)  # an integer stays exact: the tensor's packing judges it


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le",
                                      "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_every_json_encoding_is_read(encoding: str) -> None:
    assert loads('{"inputs": ["é", 1.5]}'.encode(encoding)) == {"inputs": ["é", 1.5]}


def test_malformed_bodies_say_where() -> None:
    for body, message in [(b"[[1, 2]] x", "Extra data: line 1 column 10 (char 9)"),
                          (b"{bad", "Expecting property name enclosed in double quotes"),
                          (b"", "Expecting value: line 1 column 1"),
                          (b"[1,]", "Expecting value: line 1 column 4"),
                          (b"\xff[1]", "can't decode byte 0xff")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            loads(body)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(RecursionError):
        loads(b"[" * 200_000 + b"]" * 200_000)


def test_duplicate_keys_keep_the_last_and_whitespace_is_fine() -> None:
    assert loads(b' \n{"a": 1, "a": 2}\t') == {"a": 2}


def test_parsed_events_are_checked_for_non_finite_numbers() -> None:
    check_parsed({"inputs": [[1.0, 2]], "s": "NaN"})
    check_parsed({"inputs": object()})  # not from JSON: the codecs judge it
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="NaN and Infinity are not JSON"):
            check_parsed({"inputs": [[value]]})
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested too deeply"):
        check_parsed(deep)
