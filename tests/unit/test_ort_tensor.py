"""``handler.ort.tensor``: nesting, Python values, numpy views; numpy is the oracle here (the
handler itself never imports it). Tensors' JSON: tests/unit/test_json_codec.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from handler.ort.tensor import Tensor, as_tensor, from_values, nest, zeros


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 2, 2), (2, 3), (1, 2, 1, 2, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bool", "uint64", "string"])
def test_tolist_matches_numpy(shape: tuple[int, ...], dtype: str) -> None:
    size = math.prod(shape)
    if dtype == "string":
        array = np.array([str(i) for i in range(size)], dtype=object).reshape(shape)
    else:
        array = (np.arange(size) % 2 == 0 if dtype == "bool"
                 else np.arange(size).astype(dtype)).reshape(shape)
    tensor = as_tensor(array)
    assert (tensor.dtype, tensor.shape) == (dtype, shape)
    assert tensor.tolist() == array.tolist()
    assert tensor.numpy().tolist() == array.tolist()


def test_constructors_and_reshape() -> None:
    assert from_values("int16", (2,), [1, -2]).tolist() == [1, -2]
    with pytest.raises(Exception):  # noqa: B017  struct refuses out-of-range values
        from_values("int8", (1,), [300])
    assert zeros("string", (2,)).data == ("", "")
    assert zeros("float64", (2, 2)).reshape((4,)).tolist() == [0.0] * 4
    with pytest.raises(ValueError, match="cannot reshape"):
        zeros("float64", (2, 2)).reshape((3,))
    assert nest([1, 2, 3, 4], (2, 2)) == [[1, 2], [3, 4]]
    view = Tensor("float32", (2,), bytearray(8)).numpy()
    assert view.tolist() == [0.0, 0.0] and view.flags.writeable


@pytest.mark.parametrize("shape", [(3,), (1, 3), (2, 2), (1, 30), (5, 7)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_values_read_the_same_through_every_layout(shape: tuple[int, ...], dtype: str) -> None:
    """A few values and many, one row and several, bytes and a numpy array's memory: the same
    elements of the same Python type."""
    size = math.prod(shape)
    array = (np.arange(size) % 3 == 0 if dtype == "bool"
             else (np.arange(size) - 3.25).astype(dtype)).reshape(shape)
    for tensor in (as_tensor(array), Tensor(dtype, shape, array.tobytes())):
        for _ in range(2):  # the second read: the remembered layout
            flat = tensor.flat()
            assert flat == array.ravel().tolist()
            assert {type(v) for v in flat} == {type(v) for v in array.ravel().tolist()}
            assert tensor.tolist() == array.tolist()
