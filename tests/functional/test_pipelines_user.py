"""A user pipeline (``ONNX_LAMBDA_PIPELINE=package.module``) around the real session."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.errors import ModelLoadError
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support.models import WEIGHTS


def test_user_module_pre_and_post(make_service: Any, model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", pipeline="tests.support.user_pipeline")
    body = json.dumps({"inputs": {"values": [1, 2, 3, 4]}})
    answer = json.loads(service(http_event(body=body), Context())["body"])
    low, high = np.array([1, 2, 3, 4]) @ WEIGHTS
    assert answer == {"low": low, "high": high, "echo": [1.0, 2.0, 3.0, 4.0]}
    assert service.pipeline.name == "tests.support.user_pipeline"


def test_user_module_errors_are_500_and_the_next_request_works(make_service: Any,
                                                              model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", pipeline="tests.support.user_pipeline")
    result = service(http_event(body=json.dumps({"inputs": {"wrong": 1}})), Context())
    assert result["statusCode"] == 500
    body = json.dumps({"inputs": {"values": [1, 2, 3, 4]}})
    assert service(http_event(body=body), Context())["statusCode"] == 200


def test_unimportable_pipeline_fails_init(make_service: Any, model_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match="not a built-in pipeline and not importable"):
        make_service(model_dir / "linear.onnx", pipeline="no_such_package.pipeline")


def test_a_numpy_pipeline_without_numpy_says_which_requirements_to_add(
        make_service: Any, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as in an image built without EXTRA_REQUIREMENTS=requirements-numpy.txt
    monkeypatch.setitem(sys.modules, "numpy", None)
    monkeypatch.delitem(sys.modules, "tests.support.user_pipeline", raising=False)
    with pytest.raises(ModelLoadError, match=r"numpy.*EXTRA_REQUIREMENTS=requirements-numpy\.txt"):
        make_service(model_dir / "linear.onnx", pipeline="tests.support.user_pipeline")


def test_module_without_the_hooks_fails_init(make_service: Any, model_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match="lacks preprocess, postprocess"):
        make_service(model_dir / "linear.onnx", pipeline="tests.support.models")


def test_a_cyclic_answer_is_a_500_even_after_a_large_answer(make_service: Any, model_dir: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A user module's answer is written by json, which refuses a cycle: yyjson, loaded by any
    large float32 answer, would recurse on it until the process died."""
    from handler.json_codec import SMALL, tensor_values
    from handler.ort.tensor import as_tensor

    tensor_values(as_tensor(np.zeros(SMALL, np.float32)))  # yyjson loaded, as after MiniLM's
    service = make_service(model_dir / "linear.onnx", pipeline="tests.support.user_pipeline")
    cycle: list[Any] = []
    cycle.append(cycle)
    monkeypatch.setattr(service.pipeline.module, "postprocess", lambda *args: {"c": cycle})
    body = json.dumps({"inputs": {"values": [1, 2, 3, 4]}})
    result = service(http_event(body=body), Context("cycle-1"))
    assert result["statusCode"] == 500 and json.loads(result["body"])["requestId"] == "cycle-1"
