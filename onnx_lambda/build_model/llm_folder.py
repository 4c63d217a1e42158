"""``build-model FOLDER``: a language model as its tools leave it, every file found by itself.

Three kinds of folder, told apart by their files:

- an onnxruntime-genai export: ``genai_config.json`` (its ``model.decoder.filename``, the head
  size, the context length and the EOS ids);
- an optimum-style export: ``config.json`` and ``model.onnx`` (else ``decoder_with_past_model.onnx``
  / ``decoder_model_merged.onnx``: the layout check says what to run where these do not fit);
- a Hugging Face checkpoint: ``config.json`` and ``*.safetensors`` / ``pytorch_model*.bin``,
  exported here (``llm_export``) and checked against transformers before the build.

The files that say how to use the model (``HF_FILES``) come along from the folder; for a
checkpoint, from the checkpoint (the exporter's copies are its rewrites). Where they disagree,
``handler.generation.hf_files`` holds the rule, the same at build and at serve time.

Refusals happen here, before anything is written: a folder of no known kind, a missing
``tokenizer.json``, a chat template that does not render. Each is one line naming the file and
the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnx_lambda.build_model.errors import BuildError, InvalidModelError

if TYPE_CHECKING:
    from rich.console import Console

    from onnx_lambda.build_model.spec import ModelSpec

HF_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
            "chat_template.json", "generation_config.json", "special_tokens_map.json",
            "config.json")
OPTIMUM_FILES = ("model.onnx", "decoder_with_past_model.onnx", "decoder_model_merged.onnx")
KINDS = "genai_config.json (onnxruntime-genai), config.json + model.onnx (optimum) or " \
        "config.json + *.safetensors (a Hugging Face checkpoint)"
# a conversation every chat template must render (the serve path's first request looks alike)
PROBE = [{"role": "system", "content": "You are helpful."},
         {"role": "user", "content": "Hello"}]


def kind(folder: Path) -> str | None:
    """``genai``, ``optimum``, ``checkpoint``, or None."""
    if (folder / "genai_config.json").is_file():
        return "genai"
    if not (folder / "config.json").is_file():
        return None
    if any((folder / name).is_file() for name in OPTIMUM_FILES):
        return "optimum"
    if any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model*.bin")):
        return "checkpoint"
    return None


def spec_for(folder: Path, name: str, options: dict[str, Any], workdir: Path,
             console: Console) -> ModelSpec:
    """The build of ``folder`` (exported to ``workdir`` first when it is a checkpoint)."""
    from onnx_lambda.build_model.spec import ModelSpec

    found = kind(folder)
    if found is None:
        raise InvalidModelError(f"{folder}: not a language model folder build-model knows: "
                                f"expected {KINDS}")
    files = _files(folder)
    _check_template(folder, files)
    metadata: dict[str, Any] = {}
    options = dict(options)
    if found == "genai":
        genai = _json(folder / "genai_config.json")
        model = genai.get("model", {})
        source = folder / model.get("decoder", {}).get("filename", "model.onnx")
        metadata["exporter"] = {"name": "onnxruntime-genai", "folder": "genai_config.json"}
        if isinstance(model.get("context_length"), int):
            options.setdefault("context_length", model["context_length"])
        eos = model.get("eos_token_id")
        if isinstance(eos, int | list):
            options.setdefault("eos_token_ids", eos if isinstance(eos, list) else [eos])
        files["genai_config.json"] = folder / "genai_config.json"
    elif found == "optimum":
        source = next(folder / n for n in OPTIMUM_FILES if (folder / n).is_file())
        metadata["exporter"] = {"name": "optimum-layout", "file": source.name}
    else:
        from onnx_lambda.build_model import llm_export

        source, metadata["exporter"] = llm_export.export(folder, workdir, console)
    if not source.is_file():
        raise InvalidModelError(f"{source}: missing: genai_config.json names it as the model")
    return ModelSpec(source=source, name=name, pipeline="generate", pipeline_options=options,
                     files=files, metadata=metadata)


def _files(folder: Path) -> dict[str, Path]:
    files = {n: folder / n for n in HF_FILES if (folder / n).is_file()}
    if "tokenizer.json" not in files:
        raise BuildError(f"{folder / 'tokenizer.json'}: missing: a language model needs its "
                         "fast tokenizer; write it beside the model with transformers: "
                         "AutoTokenizer.from_pretrained(CHECKPOINT).save_pretrained(FOLDER)")
    return files


def _check_template(folder: Path, files: dict[str, Path]) -> None:
    """The chat template renders a plain conversation, or the build stops naming its file."""
    from handler.generation import hf_files
    from handler.generation.chat import ChatTemplate

    def path_of(name: str) -> str:
        return str(folder / name)

    try:
        settings = hf_files.special_tokens(path_of)
        template = hf_files.chat_template(path_of, settings)
    except hf_files.FileError as exc:
        raise BuildError(f"{exc}: fix or remove the file") from None
    if template is None:
        return
    where = next((n for n in hf_files.TEMPLATE_FILES if n in files), "tokenizer_config.json")
    try:
        ChatTemplate(template, _text(settings.get("bos_token")),
                     _text(settings.get("eos_token"))).render(PROBE)
    except Exception as exc:  # jinja2's syntax and render errors, InvalidInputError
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BuildError(f"{folder / where}: the chat template fails to render a system and a "
                         f"user message ({first}): fix the template, or remove it to serve "
                         "plain prompts only") from None


def _text(token: Any) -> str:
    if isinstance(token, dict):
        token = token.get("content")
    return token if isinstance(token, str) else ""


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"{path}: not readable JSON ({exc}): fix the file") from None
    return data if isinstance(data, dict) else {}
