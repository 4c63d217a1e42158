"""``build-model FOLDER`` on the tiny test decoders' folders (their export writes an
onnxruntime-genai ``genai_config.json`` beside ``model.onnx``): the folder's kind found, the
files that say how to use the model shipped, the exporter recorded, one model file; and every
refusal one clear line naming the file and the fix, with nothing left where the output would
have gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handler.bootstrap import create
from handler.settings import Settings
from onnx_lambda.cli import main
from tests.support import decoders


@pytest.fixture(scope="module")
def decoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama-style test decoder's folder (one kind: the folder logic is the same)."""
    return decoders.folder(tmp_path_factory, "llama")


def _copy(decoder_dir: Path, to: Path, *, leave: tuple[str, ...] = ()) -> Path:
    to.mkdir()
    for path in decoder_dir.iterdir():
        if path.is_file() and path.name not in leave:
            shutil.copyfile(path, to / path.name)
    return to


def _refused(source: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["build-model", str(source), "-o", str(out)])
    assert code != 0
    assert not out.exists()
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(out.name)) == []
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error:")
    return " ".join(" ".join(lines[-3:]).split())


def test_a_genai_folder_builds_with_its_files_and_serves_its_chat_template_file(
        tmp_path: Path, decoder_dir: Path) -> None:
    source = _copy(decoder_dir, tmp_path / "export")
    settings = json.loads((source / "tokenizer_config.json").read_text())
    del settings["chat_template"]  # (where transformers 5 leaves it: chat_template.jinja only)
    (source / "tokenizer_config.json").write_text(json.dumps(settings))
    (source / "chat_template.jinja").write_text(
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}<|assistant|>")
    (source / "special_tokens_map.json").write_text(json.dumps({"eos_token": "</s>"}))
    out = tmp_path / "built"
    assert main(["build-model", str(source), "-o", str(out)]) == 0
    served = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(out)})).pipeline
    assert served.render_chat([{"role": "user", "content": "hi"}]) == "<|user|>hi<|assistant|>"
    manifest = json.loads((out / "model.json").read_text())
    assert manifest["metadata"]["exporter"]["name"] == "onnxruntime-genai"
    assert manifest["pipeline"] == "generate"
    for name in ("tokenizer.json", "chat_template.jinja", "special_tokens_map.json",
                 "genai_config.json"):
        assert (out / name).is_file(), name
    onnx_files = sorted(p.name for p in out.iterdir() if p.suffix in (".onnx", ".ort"))
    assert onnx_files == [manifest["model"]]  # one copy of the weights


def test_a_folder_of_no_known_kind_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "weights"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    err = _refused(folder, tmp_path / "out", capsys)
    assert f"{folder}: not a language model folder build-model knows" in err
    assert "genai_config.json" in err and "config.json + *.safetensors" in err


def test_a_missing_tokenizer_is_refused_naming_the_file_and_the_fix(
        tmp_path: Path, decoder_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _copy(decoder_dir, tmp_path / "export", leave=("tokenizer.json",))
    err = _refused(source, tmp_path / "out", capsys)
    assert f"{source / 'tokenizer.json'}: missing" in err
    assert "save_pretrained" in err


@pytest.mark.parametrize("template", ["{% for m in messages %}{{ m['content'] }}",
                                      "{{ raise_exception('roles must alternate') }}"])
def test_a_chat_template_that_fails_to_render_is_refused(
        tmp_path: Path, decoder_dir: Path, capsys: pytest.CaptureFixture[str],
        template: str) -> None:
    source = _copy(decoder_dir, tmp_path / "export")
    (source / "chat_template.jinja").write_text(template)
    err = _refused(source, tmp_path / "out", capsys)
    assert f"{source / 'chat_template.jinja'}: the chat template fails to render" in err
    assert "fix the template" in err


def test_an_unknown_layout_says_what_to_run(tmp_path: Path, decoder_dir: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import onnx

    source = _copy(decoder_dir, tmp_path / "export")
    model = onnx.load(str(source / "model.onnx"))
    for value in model.graph.input:  # a head size no file and no node gives
        if value.name.startswith("past_key_values."):
            value.type.tensor_type.shape.dim[3].dim_param = "head"
    onnx.save(model, str(source / "model.onnx"))
    (source / "genai_config.json").write_text(json.dumps({"model": {"decoder": {}}}))
    (source / "config.json").unlink(missing_ok=True)
    err = _refused(source, tmp_path / "out", capsys)
    assert "its head size ('head') is symbolic" in err
    assert "python -m onnxruntime_genai.models.builder -i CHECKPOINT" in err
