"""``handler.ort.float_text``: the shortest float32/float16 text, checked against numpy's
(Dragon4, ``unique=True``) on every float16, every float32 power of two and its neighbours, and
random float32 bit patterns; the text is what ``json`` writes for the same floats."""

from __future__ import annotations

import json

import numpy as np
import pytest

from handler.ort.float_text import SMALL, texts
from handler.ort.tensor import as_tensor


def _oracle(array: np.ndarray) -> list[str]:
    """numpy's shortest decimal of each value, as ``repr`` (and so ``json``) writes it."""
    return [repr(float(np.format_float_positional(v, unique=True))) if np.isfinite(v)
            else "null" for v in array]


# both ways: the batch passes (the whole array at once) and one by one (chunks under SMALL)
BATCHES = pytest.mark.parametrize("chunk", [None, SMALL - 1], ids=["batch", "one-by-one"])


def _ours(array: np.ndarray, chunk: int | None = None) -> list[str]:
    with np.errstate(invalid="ignore"):  # signalling NaNs among the random bit patterns
        widened = array.astype(np.float64).tolist()
    step = chunk or max(len(widened), 1)
    found, floats, non_finite = [], [], 0
    for start in range(0, len(widened), step):
        part = texts(widened[start:start + step], array.dtype.name)
        found += part[0]
        floats += part[1]
        non_finite += part[2]
    assert non_finite == int((~np.isfinite(array)).sum())
    assert np.array_equal(np.array(floats, array.dtype), array, equal_nan=True)
    return [t.decode() for t in found]


@BATCHES
def test_every_float16(chunk: int | None) -> None:
    every = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    assert _ours(every, chunk) == _oracle(every)


@BATCHES
def test_float32_powers_of_two_and_their_neighbours(chunk: int | None) -> None:
    powers = np.array([2.0 ** k for k in range(-149, 128)], np.float32)
    up, down = np.nextafter(powers, np.float32(np.inf)), np.nextafter(powers, np.float32(0))
    values = np.concatenate([powers, up[np.isfinite(up)], down, -powers])
    assert _ours(values, chunk) == _oracle(values)


@BATCHES
@pytest.mark.parametrize("scale", ["bits", "embedding", "large"])
def test_random_float32(scale: str, chunk: int | None) -> None:
    rng = np.random.default_rng(7)
    values = {"bits": lambda: rng.integers(0, 2 ** 32, 20000, dtype=np.uint64)
              .astype(np.uint32).view(np.float32),  # every exponent; NaN, inf, subnormals too
              "embedding": lambda: (rng.standard_normal(20000) * 0.05).astype(np.float32),
              "large": lambda: rng.uniform(-2e7, 2e7, 5000).astype(np.float32)}[scale]()
    assert _ours(values, chunk) == _oracle(values)


@BATCHES
def test_integral_and_signed_zero_values_are_written_as_floats(chunk: int | None) -> None:
    values = np.tile(np.array([0.0, -0.0, 1.0, -3.0, 1e6, 16777216.0, 3e38, 0.5], np.float32),
                     4)  # 32 values: the batch way too
    assert _ours(values, chunk) == ["0.0", "-0.0", "1.0", "-3.0", "1000000.0", "16777216.0",
                                    "3e+38", "0.5"] * 4


@pytest.mark.parametrize("shape", [(30,), (3, 9), (2, 3, 4), (1, 1, 24, 1), (5, 8)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_json_text_is_what_json_writes_for_its_list(shape: tuple[int, ...], dtype: str) -> None:
    array = (np.random.default_rng(3).standard_normal(shape) * 30).astype(dtype)
    array.reshape(-1)[::4] = 0
    value = as_tensor(array).encoded_json()
    assert value.text == json.dumps(value, separators=(",", ":"))
    assert np.array_equal(np.array(json.loads(value.text), dtype), array)


def test_json_text_writes_null_for_non_finite_values() -> None:
    array = np.tile(np.array([[1.5, np.nan], [np.inf, -np.inf], [1e-45, 2.0]], np.float32),
                    (SMALL, 1))
    value = as_tensor(array).encoded_json()
    assert value.text == "[" + ",".join(["[1.5,null],[null,null],[1e-45,2.0]"] * SMALL) + "]"
    assert value.non_finite == 3 * SMALL
    assert np.isnan(value[0][1]) and value[1] == [np.inf, -np.inf]  # the values stay floats


def test_a_small_tensor_carries_its_text_too() -> None:
    value = as_tensor(np.array([[0.1, 2.0], [np.nan, 3.25]], np.float32)).encoded_json()
    assert value.text == "[[0.1,2.0],[null,3.25]]" and value.non_finite == 1
    assert value[0] == [0.1, 2.0] and np.isnan(value[1][0])  # the shortest floats
