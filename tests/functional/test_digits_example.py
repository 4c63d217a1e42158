"""``onnx-lambda build-model digits`` end to end: train, convert, build, serve, classify."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from handler.manifest import Manifest
from onnx_lambda.examples import digits
from tests.conftest import Context


def test_manifest_reports_accuracy_and_full_agreement(digits_dir: Path) -> None:
    manifest = Manifest.load(digits_dir)
    assert manifest.pipeline == "classifier"
    assert manifest.labels == tuple(str(i) for i in range(10))
    assert manifest.metadata["test_accuracy"] >= 0.95
    assert manifest.metadata["sklearn_agreement"] == 1.0
    assert manifest.metadata["build"]["accuracy"]["top1"] == 1.0
    example = np.asarray(manifest.example)
    assert example.shape == (1, 64) and example.dtype == np.float64  # a JSON 1×64 list


def test_served_predictions_on_the_held_out_split(digits_dir: Path,
                                                  make_service: Callable[..., Any]) -> None:
    features, targets = load_digits(return_X_y=True)
    _, x_test, _, y_test = train_test_split(
        features, targets, test_size=digits.TEST_FRACTION, random_state=digits.SEED,
        stratify=targets)
    service = make_service(digits_dir, verify="always")
    body = service({"inputs": x_test.tolist(), "parameters": {"top_k": 1}}, Context())
    predicted = np.array([int(p["label"]) for p in body["predictions"]])
    assert float(np.mean(predicted == y_test)) >= 0.95
    assert all(len(p["top_k"]) == 1 and 0 < p["score"] <= 1 for p in body["predictions"])


def test_the_manifest_example_is_served(digits_dir: Path,
                                        make_service: Callable[..., Any]) -> None:
    manifest = Manifest.load(digits_dir)
    body = make_service(digits_dir)({"inputs": manifest.example}, Context())
    assert len(body["predictions"]) == 1
    assert len(body["predictions"][0]["top_k"]) == manifest.pipeline_options["top_k"]
