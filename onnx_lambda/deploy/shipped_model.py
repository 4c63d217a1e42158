"""The model ``sam build && sam deploy`` ships: read it from, and set it in, its one home,
``template.yaml``'s ``Mappings: Model: Shipped: Path`` (``onnx-lambda deploy-config``;
``commands`` is its CLI). Every consumer reads that value:

- the image functions' ``Metadata.DockerBuildArgs.MODEL`` (``Fn::FindInMap``, which SAM CLI
  resolves when it builds), so handler/Dockerfile copies that folder and sets
  ``ONNX_LAMBDA_MODEL`` to it;
- layers/Makefile (the zip + layer variant, strategy ``snapstart``), through
  ``layers/build_layer.py shipped-model``;
- every inference function's ``ONNX_LAMBDA_MODEL`` (unless the ``ModelS3Uri`` parameter is set).

samconfig.toml does not name the model. The edit is a targeted line edit: only the value
changes, comments and layout stay byte for byte (a YAML round trip re-flows CloudFormation's
folded strings and flow mappings). The template is parsed back afterwards and must differ in
that value only; otherwise it is restored and the edit fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from handler.manifest import takes_text
from onnx_lambda.emulator.intrinsics import parse_yaml

TEMPLATE = "template.yaml"
SHIPPED = ("Mappings", "Model", "Shipped", "Path")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class DeployConfigError(Exception):
    """The model or a file cannot be used; the message says what to do."""


def needs_text_requirements(root: Path, name: str) -> bool:
    """Model NAME takes text (the text-embedding or rerank pipeline, or a classifier that ships
    its tokenizer) but the image does not install tokenizers."""
    try:
        manifest = json.loads((root / "models" / name / "model.json").read_text())
        text = takes_text(manifest.get("pipeline"), manifest.get("pipeline_options") or {},
                          manifest.get("files") or {})
    except (OSError, ValueError, AttributeError):
        return False
    template = parse_yaml((root / TEMPLATE).read_text(encoding="utf-8"))
    build_args = template["Resources"]["InferenceFunction"]["Metadata"]["DockerBuildArgs"]
    return text and "EXTRA_REQUIREMENTS" not in build_args


def model_name(root: Path, model: Path) -> str:
    """NAME of ``root/models/NAME``, a folder with ``model.json`` (what the image copies)."""
    folder = model.resolve()
    models = (root / "models").resolve()
    if folder.is_file():
        raise DeployConfigError(
            f"{model} is a file; the deployed function ships a model folder: run "
            f"`onnx-lambda build-model {model} -o models/{model.stem}` first")
    if folder.parent != models:
        raise DeployConfigError(f"{model} is not a folder directly under {models} (the image "
                                "copies models/NAME): build it with -o models/NAME")
    if not (folder / "model.json").is_file():
        raise DeployConfigError(f"{model}/model.json missing: run `onnx-lambda build-model "
                                f"SOURCE -o models/{folder.name}` first")
    if NAME.fullmatch(folder.name) is None:
        raise DeployConfigError(f"model folder name {folder.name!r}: use letters, digits, "
                                "'.', '_' and '-' (it becomes a Docker build argument)")
    return folder.name


def apply(root: Path, name: str) -> list[str]:
    """Make ``models/NAME`` the shipped model; returns the files that changed (none or the
    template). All or nothing."""
    path = root / TEMPLATE
    if not path.is_file():
        raise DeployConfigError(f"{path} not found: run from the project root or pass --root")
    before = path.read_text(encoding="utf-8")
    after = yaml_set(before, SHIPPED, f"models/{name}")
    expected = parse_yaml(before)
    _set(expected, SHIPPED, f"models/{name}")
    if parse_yaml(after) != expected:
        raise DeployConfigError(f"{TEMPLATE}: the edit would change more than the model")
    if after == before:
        return []
    path.write_text(after, encoding="utf-8")
    return [TEMPLATE]


def shipped(root: Path) -> str:
    """``models/NAME``: the model the template ships."""
    return str(_get(parse_yaml((root / TEMPLATE).read_text(encoding="utf-8")), SHIPPED))


# -- YAML: a targeted edit of one scalar, checked by parsing back ----------------------------
def yaml_set(text: str, path: tuple[str, ...], value: str) -> str:
    """Replace the plain scalar at ``path`` (block mappings) keeping its line's comment."""
    lines = text.splitlines(keepends=True)
    start, end, parent_indent = 0, len(lines), -1
    for depth, key in enumerate(path):
        child_indent = next((_indent(line) for line in lines[start:end] if _content(line)), -1)
        pattern = re.compile(rf"( {{{child_indent}}}){re.escape(key)}:(?P<rest>[^\r\n]*)")
        at = next((i for i in range(start, end) if pattern.fullmatch(lines[i].rstrip("\r\n"))),
                  None)
        if child_indent <= parent_indent or at is None:
            raise DeployConfigError(f"{TEMPLATE} has no {'.'.join(path[:depth + 1])} "
                                    "(a block mapping) to set")
        if depth == len(path) - 1:
            rest = pattern.fullmatch(lines[at].rstrip("\r\n"))["rest"]  # type: ignore[index]
            scalar, _, comment = rest.partition(" #")
            if not scalar.strip() or scalar.strip()[0] in "[{&*!|>'\"":
                raise DeployConfigError(f"{TEMPLATE}: {'.'.join(path)} is not a plain value")
            ending = lines[at][len(lines[at].rstrip("\r\n")):]
            lines[at] = (f"{' ' * child_indent}{key}: {value}"
                         f"{' #' + comment if comment else ''}{ending}")
        start, parent_indent = at + 1, child_indent
        end = next((i for i in range(start, end)
                    if _content(lines[i]) and _indent(lines[i]) <= parent_indent), end)
    return "".join(lines)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _set(tree: Any, path: tuple[str, ...], value: str) -> None:
    _get(tree, path[:-1])[path[-1]] = value
