"""The dim rule: only a real shared ``dim_param`` ties axes; exporters' placeholders never do."""

from __future__ import annotations

import numpy as np
import pytest

from handler import tensors
from handler.dims import is_shared
from handler.errors import InvalidInputError
from handler.model import TensorSpec

F32 = np.dtype(np.float32)


@pytest.mark.parametrize("name", ["batch", "batch_size", "sequence", "s0", "N", "height_32",
                                  # a prefix without its counter, or another text after it
                                  "unk__", "unk__x", "DynamicDimension", "DynamicDimension.",
                                  "DynamicDimension..5", "p2o.DynamicDimension5", "unk__²"])
def test_real_names_are_shared(name: str) -> None:
    assert is_shared(name)


@pytest.mark.parametrize("name", [None, 3, "", " ", "?", "None", "none", "-1", "unk__12",
                                  "unk__0", "p2o.DynamicDimension.3", "DynamicDimension.0",
                                  "DynamicDimension7", " unk__2 ", "unk__١٢"])
def test_placeholders_and_generated_names_are_not(name: object) -> None:
    assert not is_shared(name)


def spec(name: str, *shape: int | str | None) -> TensorSpec:
    return TensorSpec(name, F32, "FP32", tuple(shape))


def test_two_question_mark_axes_take_different_sizes() -> None:
    feeds = tensors.check({"x": np.zeros((1, 48, 192), np.float32)}, [spec("x", 1, "?", "?")])
    assert feeds["x"].shape == (1, 48, 192)


def test_generated_names_across_inputs_are_independent() -> None:
    specs = [spec("a", "unk__1", 4), spec("b", "unk__2", 4)]
    feeds = tensors.check({"a": np.zeros((2, 4), np.float32), "b": np.zeros((5, 4), np.float32)},
                          specs)
    assert feeds["b"].shape == (5, 4)


def test_a_shared_name_still_ties_axes_and_the_error_names_it() -> None:
    specs = [spec("a", "batch", 4), spec("b", "batch", 4)]
    with pytest.raises(InvalidInputError, match="'batch'"):
        tensors.check({"a": np.zeros((2, 4), np.float32), "b": np.zeros((3, 4), np.float32)},
                      specs)
