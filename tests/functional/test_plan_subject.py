"""``onnx_lambda.plan.subject.prepare``: the request files every benchmark and ``tune`` serve,
in a temporary folder that goes when the ``with`` block ends, or when preparing fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnx_lambda.plan import subject as subject_module
from onnx_lambda.plan.subject import prepare
from tests.support import models


def test_the_folder_holds_the_request_then_goes(tmp_path: Path) -> None:
    model = models.linear(tmp_path / "linear.onnx")
    with prepare(model) as subject:
        assert subject.workdir.is_dir()
        assert json.loads(subject.request_file.read_bytes())["inputs"]
        assert json.loads(subject.event_file.read_text())["rawPath"] == "/predict"
    assert not subject.workdir.exists()


def test_a_failed_prepare_leaves_no_folder(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real_mkdtemp = subject_module.tempfile.mkdtemp

    def mkdtemp(**kwargs: str) -> str:
        made.append(real_mkdtemp(**kwargs))
        return made[-1]

    def broken(body: bytes) -> dict[str, object]:
        raise RuntimeError("event failed")

    monkeypatch.setattr(subject_module.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(subject_module, "http_api_event", broken)
    with pytest.raises(RuntimeError, match="event failed"):
        prepare(models.linear(tmp_path / "linear.onnx"))
    assert len(made) == 1 and not Path(made[0]).exists()
