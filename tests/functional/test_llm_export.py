"""A checkpoint exported without onnxruntime-genai (``llm_export.export``'s torch path):
torch.onnx's TorchScript exporter first, its dynamo exporter where that fails; each export
checked against transformers and named in the manifest's ``exporter``; and ``build-model
CHECKPOINT`` that way, end to end, served. On the tiny test llama (seed 0)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from rich.console import Console

from handler.manifest import Manifest
from onnx_lambda.build_model import llm_export
from onnx_lambda.cli import main
from tests.functional.test_generate import predict
from tests.support import decoders

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def without_genai(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without the ``build-llm`` extra's onnxruntime-genai."""
    monkeypatch.setattr(llm_export, "GENAI", "onnxruntime_genai_not_installed")


def _export(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
            ) -> tuple[Path, dict[str, Any], str]:
    console = Console(record=True, width=200)
    path, exporter = llm_export.export(decoders.checkpoint(tmp_path_factory), tmp_path, console)
    return path, exporter, console.export_text()


@pytest.mark.usefixtures("without_genai")
def test_the_torchscript_export_is_checked_and_named(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    path, exporter, printed = _export(tmp_path_factory, tmp_path)
    assert exporter["name"] == "torch.onnx" and exporter["exporter"] == "torchscript"
    assert exporter["max_abs_diff"] <= llm_export.TOLERANCE
    assert "dynamo" not in printed and "logits vs transformers" in printed
    inputs = [i.name for i in onnx.load(str(path), load_external_data=False).graph.input]
    assert inputs[:3] == ["input_ids", "attention_mask", "position_ids"]


@pytest.mark.usefixtures("without_genai")
def test_a_failing_torchscript_export_falls_back_to_dynamo(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch without the TorchScript exporter, or a trace it cannot take: the dynamo export,
    checked the same way, replaces whatever the failed attempt left."""
    real = llm_export.torch_export
    tried: list[bool] = []

    def no_torchscript(checkpoint: Path, out: Path, position_ids: bool = True,
                       dynamo: bool = True) -> None:
        tried.append(dynamo)
        if not dynamo:
            out.mkdir(parents=True, exist_ok=True)
            (out / "model.onnx").write_bytes(b"half-written")
            raise RuntimeError("the TorchScript exporter is gone\nstack")
        real(checkpoint, out, position_ids, dynamo)

    monkeypatch.setattr(llm_export, "torch_export", no_torchscript)
    path, exporter, printed = _export(tmp_path_factory, tmp_path)
    assert tried == [False, True]
    assert exporter["exporter"] == "dynamo" and exporter["max_abs_diff"] <= llm_export.TOLERANCE
    assert "TorchScript exporter failed (the TorchScript exporter is gone)" in " ".join(
        printed.split())
    onnx.checker.check_model(str(path))  # the dynamo export, not the half-written file


@pytest.mark.usefixtures("without_genai")
def test_build_model_on_a_checkpoint_without_genai_serves_transformers_tokens(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
        make_service: Callable[..., Any]) -> None:
    """The checkpoint folder as SOURCE on a machine without onnxruntime-genai: exported by
    TorchScript, built, and served greedy tokens equal to transformers' own generate."""
    out = tmp_path / "built"
    assert main(["build-model", str(decoders.checkpoint(tmp_path_factory)), "-o", str(out)]) == 0
    exporter = Manifest.load(out).metadata["exporter"]
    assert (exporter["name"], exporter["exporter"]) == ("torch.onnx", "torchscript")
    service = make_service(out)
    for prompt in decoders.PROMPTS:
        status, body = predict(service, prompt, temperature=0, max_tokens=12, details=True)
        assert status == 200, body
        ids = body["details"]["prompt_token_ids"]
        assert body["details"]["token_ids"] == decoders.transformers_greedy("llama", ids, 12)
