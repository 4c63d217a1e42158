"""JSON values → arrays checked against an input's signature (no session needed)."""

from __future__ import annotations

import numpy as np
import pytest

from handler import tensors
from handler.errors import InvalidInputError
from handler.model import DType, TensorSpec
from handler.tensors import from_json

UINT64 = (TensorSpec("x", np.dtype(np.uint64), "UINT64", ("a", "b")),)


@pytest.mark.parametrize("row", [[2**63 + 1, 0], [2**64 - 1024, 0], [2**64 - 1, 2**63]])
def test_integers_beyond_int64_convert_exactly(row: list[int]) -> None:
    # numpy alone infers float64 for these rows and loses the last digits
    assert from_json([row], UINT64)["x"].tolist() == [row]


@pytest.mark.parametrize("row", [[2**64, 0], [-1, 2**63], [1.5, 2**63]])
def test_out_of_range_or_fractional_values_are_rejected(row: list[float]) -> None:
    with pytest.raises(InvalidInputError, match="uint64"):
        from_json([row], UINT64)


def test_describe_keeps_symbolic_names_and_marks_anonymous_dims() -> None:
    spec = TensorSpec("x", np.dtype(np.float32), "FP32",
                      ("batch", None, "", " ? ", -1, 3, "floor(h/32)", "unk__5"))
    assert spec.describe() == "x: float32[batch, ?, ?, ?, ?, 3, floor(h/32), unk__5]"
    assert TensorSpec("sr", np.dtype(np.int64), "INT64", ()).describe() == "sr: int64[]"
    assert TensorSpec("s", np.dtype(object), "BYTES", ("n",)).describe() == "s: string[n]"


@pytest.mark.parametrize("value", [
    [[0.0, 1.5, -2.0]], [[]], [[1, [2]]], [[[1, 2]]], [[[]]], [[1], [2]], [[1, 2], [3]],
    [["a", "b"]], [[True, 1.0]], [[None]], [1, 2, 3], [], [[1, 2, 3]] * 3, [[[1], [2, 3]]],
])
def test_one_row_shortcut_agrees_with_the_level_walk(value: list) -> None:
    """``_nested``'s batch-of-one shortcut answers what ``_nested_levels`` does (or raises)."""
    spec = TensorSpec("x", DType("float32"), "FP32", (None, None))

    def outcome(walk):  # (shape, flat), or the error message
        try:
            return walk(value, spec)
        except InvalidInputError as exc:
            return str(exc)

    assert outcome(tensors._nested) == outcome(tensors._nested_levels)
