"""Pure parts of the build: the example flags' parsing and checks, the gate's comparisons."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from handler.manifest import TensorInfo
from onnx_lambda.build_model import example
from onnx_lambda.build_model.errors import ExampleArgumentError
from onnx_lambda.build_model.gate import Thresholds, collect, comparable_outputs, compare

INPUTS = (TensorInfo("images", "float32", ("batch", 3, "?", "?")),
          TensorInfo("sr", "int64", ()))


def test_shape_and_dim_flags_parse() -> None:
    given = example.parse(None, ["images=1x3x640x480", "sr="], ["batch=1"])
    assert given.shapes == {"images": (1, 3, 640, 480), "sr": ()}
    assert given.dims == {"batch": 1}
    assert example.check(given, INPUTS).shapes["images"] == (1, 3, 640, 480)


@pytest.mark.parametrize(("shapes", "dims", "message"), [
    (["images"], [], "expected NAME=1x3x224x224"),
    (["images=1x3x-1x2"], [], "expected NAME=1x3x224x224"),
    ([], ["batch=x"], "expected SYMBOL=N"),
    (["images=1x4x8x8"], [], "does not fit the model's batchx3x?x?"),  # static channels are 3
    (["images=1x3x8"], [], "does not fit"),
    (["labels=1"], [], "unknown input(s) labels"),
    ([], ["height=8"], "no input axis is named height"),
])
def test_flags_that_do_not_fit_are_refused(shapes: list[str], dims: list[str],
                                           message: str) -> None:
    with pytest.raises(ExampleArgumentError, match=re.escape(message)):
        example.check(example.parse(None, shapes, dims), INPUTS)


def test_example_arrays_are_coerced_exactly() -> None:
    given = example.Given(arrays={"images": np.zeros((1, 3, 2, 2)), "sr": 16000})
    checked = example.check(given, INPUTS)
    assert checked.arrays["images"].dtype == np.float32 and checked.arrays["sr"].dtype == np.int64
    assert checked.shapes == {"images": (1, 3, 2, 2), "sr": ()}
    with pytest.raises(ExampleArgumentError, match="do not fit int64 exactly"):
        example.check(example.Given(arrays={"sr": 16000.5}), INPUTS)
    with pytest.raises(ExampleArgumentError, match="feeds a single-input model"):
        example.check(example.Given(arrays={"": np.zeros(2)}), INPUTS)


def test_the_gate_compares_labels_and_vectors_separately() -> None:
    reference = {"label": np.array([["a", "b", "c", "d"]]),
                 "scores": np.array([[1.0, 0.0], [0.0, 1.0]])}
    candidate = {"label": np.array([["a", "b", "c", "x"]]),
                 "scores": np.array([[1.0, 0.0], [1.0, 1.0]])}
    accuracy = compare(reference, candidate, classifier=True)
    assert accuracy.agreement == 0.75
    assert accuracy.min_cosine == pytest.approx(2 ** -0.5) and accuracy.top1 == 0.5
    assert accuracy.compared == ("label (agreement)", "scores (cosine)")
    assert accuracy.failures(Thresholds()) != []
    assert compare({}, {}, classifier=False).describe().startswith("nothing comparable")


def test_comparable_outputs_reads_maps_strings_and_skips_the_rest() -> None:
    outputs = {"label": np.array(["b", "a"], dtype=object),
               "probabilities": [{"b": 0.25, "a": 0.75}, {"a": 0.5, "b": 0.5}],
               "empty": np.zeros((1, 0), np.float32), "opaque": object()}
    rows = comparable_outputs(outputs, {})
    assert sorted(rows) == ["label", "probabilities"]
    assert rows["label"].tolist() == [["b", "a"]]
    assert rows["probabilities"].tolist() == [[0.75, 0.25], [0.5, 0.5]]  # by key: a, b


def test_an_output_whose_size_varies_is_compared_sample_by_sample() -> None:
    boxes = [np.ones((2, 4)), np.zeros((0, 4)), np.full((1, 4), 2.0)]  # detections per sample
    same = compare({"boxes": boxes}, {"boxes": [b.copy() for b in boxes]}, classifier=False)
    assert same.min_cosine == 1.0 and same.max_abs_error == 0.0 and same.agreement is None
    fewer = compare({"boxes": boxes}, {"boxes": [boxes[0], boxes[1], boxes[1]]},
                    classifier=False)
    assert fewer.agreement == 0.0 and fewer.compared == ("boxes (shape changed)",)
    assert fewer.failures(Thresholds())


def test_collect_keeps_a_variable_size_output_per_sample() -> None:
    sizes = iter((3, 1))

    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"scores": np.ones((1, 2)), "boxes": np.ones((1, next(sizes), 4))}

    rows = collect(run, [{}, {}], comparable_outputs)
    assert rows["scores"].shape == (2, 2)  # stacked: same width in every sample
    assert [b.shape for b in rows["boxes"]] == [(1, 12), (1, 4)]  # one entry per sample


def test_a_small_example_is_inline_and_exact(tmp_path: Path) -> None:
    feeds = {"x": np.random.default_rng(0).random((2, 3)).astype(np.float32),
             "sr": np.array(16000, np.int64), "word": np.array(["hi"], dtype=object)}
    inline, file = example.write(feeds, "tensor", tmp_path)
    assert file is None and inline["sr"] == 16000 and inline["word"] == ["hi"]
    assert all(len(repr(v)) <= 12 for row in inline["x"] for v in row)  # float32's shortest
    np.testing.assert_array_equal(np.asarray(inline["x"], np.float32), feeds["x"])
    inline, file = example.write(feeds, "text-embedding", tmp_path)  # its requests: not tensors
    assert inline is None and file == example.EXAMPLE_FILE
    with np.load(tmp_path / file, allow_pickle=False) as archive:
        assert archive["word"].tolist() == ["hi"] and archive["x"].dtype == np.float32
