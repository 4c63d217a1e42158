"""``handler.ort.float_text``: the shortest float32/float16 text, checked against numpy's
(Dragon4, ``unique=True``) on every float16, every float32 power of two and its neighbours, and
random float32 bit patterns; the text is what ``json`` writes for the same floats."""

from __future__ import annotations

import json

import numpy as np
import pytest

from handler.ort.float_text import texts
from handler.ort.tensor import as_tensor


def _oracle(array: np.ndarray) -> list[str]:
    """numpy's shortest decimal of each value, as ``repr`` (and so ``json``) writes it."""
    return [repr(float(np.format_float_positional(v, unique=True))) if np.isfinite(v)
            else "null" for v in array]


def _ours(array: np.ndarray) -> list[str]:
    with np.errstate(invalid="ignore"):  # signalling NaNs among the random bit patterns
        widened = array.astype(np.float64).tolist()
    found, floats, non_finite = texts(widened, array.dtype.name)
    assert non_finite == int((~np.isfinite(array)).sum())
    assert np.array_equal(np.array(floats, array.dtype), array, equal_nan=True)
    return [t.decode() for t in found]


def test_every_float16() -> None:
    every = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    assert _ours(every) == _oracle(every)


def test_float32_powers_of_two_and_their_neighbours() -> None:
    powers = np.array([2.0 ** k for k in range(-149, 128)], np.float32)
    up, down = np.nextafter(powers, np.float32(np.inf)), np.nextafter(powers, np.float32(0))
    values = np.concatenate([powers, up[np.isfinite(up)], down, -powers])
    assert _ours(values) == _oracle(values)


@pytest.mark.parametrize("scale", ["bits", "embedding", "large"])
def test_random_float32(scale: str) -> None:
    rng = np.random.default_rng(7)
    values = {"bits": lambda: rng.integers(0, 2 ** 32, 20000, dtype=np.uint64)
              .astype(np.uint32).view(np.float32),  # every exponent; NaN, inf, subnormals too
              "embedding": lambda: (rng.standard_normal(20000) * 0.05).astype(np.float32),
              "large": lambda: rng.uniform(-2e7, 2e7, 5000).astype(np.float32)}[scale]()
    assert _ours(values) == _oracle(values)


def test_integral_and_signed_zero_values_are_written_as_floats() -> None:
    values = np.array([0.0, -0.0, 1.0, -3.0, 1e6, 16777216.0, 3e38, 0.5], np.float32)
    assert _ours(values) == ["0.0", "-0.0", "1.0", "-3.0", "1000000.0", "16777216.0",
                             "3e+38", "0.5"]


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (1, 1, 2, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_json_text_is_what_json_writes_for_its_list(shape: tuple[int, ...], dtype: str) -> None:
    array = (np.random.default_rng(3).standard_normal(shape) * 30).astype(dtype)
    array.reshape(-1)[::4] = 0
    value = as_tensor(array).encoded_json()
    assert value.text == json.dumps(value, separators=(",", ":"))
    assert np.array_equal(np.array(json.loads(value.text), dtype), array)


def test_json_text_writes_null_for_non_finite_values() -> None:
    array = np.array([[1.5, np.nan], [np.inf, -np.inf], [1e-45, 2.0]], np.float32)
    value = as_tensor(array).encoded_json()
    assert value.text == "[[1.5,null],[null,null],[1e-45,2.0]]"
    assert value.non_finite == 3
    assert np.isnan(value[0][1]) and value[1] == [np.inf, -np.inf]  # the values stay floats
