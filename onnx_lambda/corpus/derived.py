"""Corpus models made by standard converters, for signature features that no small PyPI wheel
ships as a model:

- ``float16``: a real model (rapidocr's text-direction classifier) converted to float16 inputs
  and outputs by the converter onnxruntime ships (``onnxruntime.transformers.float16``, the
  onnxconverter-common code), ``keep_io_types=False``.
- ``iris``: a scikit-learn logistic regression on the iris data scikit-learn bundles, with its
  string class names, exported by skl2onnx with its defaults: a string label tensor and the
  probabilities as a sequence of maps (ZipMap)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def float16(source: Path | None, target: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    assert source is not None
    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=False)
    onnx.save(model, str(target))


def iris(_source: Path | None, target: Path) -> None:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    data = load_iris()
    labels = data.target_names[data.target]  # 'setosa', 'versicolor', 'virginica'
    classifier = LogisticRegression(max_iter=500).fit(data.data, labels)
    onnx_model = to_onnx(classifier, data.data[:1].astype("float32"), target_opset=17)
    target.write_bytes(onnx_model.SerializeToString())


RECIPES: dict[str, Callable[[Path | None, Path], None]] = {"float16": float16, "iris": iris}
