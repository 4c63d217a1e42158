"""The model ``sam build && sam deploy`` ships: read it from, and set it in, every file that
names it (``onnx-lambda deploy-config``; ``commands`` is its CLI).

- ``template.yaml``: ``Metadata.DockerBuildArgs.MODEL`` of ``InferenceFunction`` and
  ``InferenceManagedFunction`` (what the images copy) and the ``ModelPath`` parameter's
  ``Default`` (``ONNX_LAMBDA_MODEL`` of every variant);
- ``handler/Dockerfile``: ``ARG MODEL=NAME`` (a plain ``docker build`` ships the same);
- ``layers/Makefile``: ``MODEL ?= NAME`` (the zip + layer variant, strategy ``snapstart``);
- ``samconfig.toml``: ``ModelPath="models/NAME"`` in every ``parameter_overrides`` (a value saved
  there by ``sam deploy --guided`` would otherwise win over the template's default).

The edits are targeted line edits: only the value changes, comments and layout stay byte for
byte. (ruamel.yaml and tomlkit come only with aws-sam-cli, not with this tool's own
dependencies, and a YAML round trip re-flows CloudFormation's folded strings and flow
mappings.) Each file is parsed back afterwards and must say exactly what was meant, everything
else unchanged; otherwise every file is restored and the edit fails.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from handler.manifest import takes_text
from onnx_lambda.emulator.intrinsics import parse_yaml

TEMPLATE = "template.yaml"
DOCKERFILE = "handler/Dockerfile"
MAKEFILE = "layers/Makefile"
SAMCONFIG = "samconfig.toml"
# Both image functions: InferenceFunction, and InferenceManagedFunction (Managed Instances).
BUILD_ARGS = tuple(("Resources", function, "Metadata", "DockerBuildArgs", "MODEL")
                   for function in ("InferenceFunction", "InferenceManagedFunction"))
MODEL_PATH = ("Parameters", "ModelPath", "Default")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
DOCKER_ARG = re.compile(r"^ARG MODEL=(\S*)[ \t]*$", re.MULTILINE)
MAKE_DEFAULT = re.compile(r"^MODEL \?= *(\S*)[ \t]*$", re.MULTILINE)


class DeployConfigError(Exception):
    """The model or a file cannot be used; the message says what to do."""


def needs_text_requirements(root: Path, name: str) -> bool:
    """Model NAME takes text (the text-embedding pipeline, or a classifier that ships its
    tokenizer) but the image does not install tokenizers."""
    try:
        manifest = json.loads((root / "models" / name / "model.json").read_text())
        text = takes_text(manifest.get("pipeline"), manifest.get("pipeline_options") or {},
                          manifest.get("files") or {})
    except (OSError, ValueError, AttributeError):
        return False
    build_args = _get(parse_yaml((root / TEMPLATE).read_text(encoding="utf-8")), BUILD_ARGS[0][:-1])
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
    """Set NAME everywhere; returns the files that changed. All or nothing."""
    from onnx_lambda.plan.sizing import write_samconfig

    paths = {rel: root / rel for rel in (TEMPLATE, DOCKERFILE, MAKEFILE, SAMCONFIG)}
    before = {rel: path.read_text(encoding="utf-8") if path.exists() else None
              for rel, path in paths.items()}
    for rel in (TEMPLATE, DOCKERFILE, MAKEFILE):
        if before[rel] is None:
            raise DeployConfigError(f"{paths[rel]} not found: run from the project root "
                                    "or pass --root")
    try:
        template = before[TEMPLATE] or ""
        for build_arg in BUILD_ARGS:
            template = yaml_set(template, build_arg, name)
        paths[TEMPLATE].write_text(yaml_set(template, MODEL_PATH, f"models/{name}"), "utf-8")
        paths[DOCKERFILE].write_text(_replace_one(DOCKER_ARG, before[DOCKERFILE] or "",
                                                  f"ARG MODEL={name}", DOCKERFILE), "utf-8")
        paths[MAKEFILE].write_text(_replace_one(MAKE_DEFAULT, before[MAKEFILE] or "",
                                                f"MODEL ?= {name}", MAKEFILE), "utf-8")
        for section in samconfig_sections(before[SAMCONFIG]):
            write_samconfig(paths[SAMCONFIG], f"models/{name}", parameter="ModelPath",
                            section=section)
        _verify(root, before, name)
    except BaseException:
        for rel, text in before.items():  # all or nothing
            if text is None:
                paths[rel].unlink(missing_ok=True)
            else:
                paths[rel].write_text(text, encoding="utf-8")
        raise
    return [rel for rel, path in paths.items() if path.read_text(encoding="utf-8") != before[rel]]


def shipped(root: Path) -> dict[str, str | None]:
    """The model each place names (None: a samconfig section that leaves it to the template)."""
    template = parse_yaml((root / TEMPLATE).read_text(encoding="utf-8"))
    names: dict[str, str | None] = {
        "template DockerBuildArgs": str(_get(template, BUILD_ARGS[0])),
        "template managed DockerBuildArgs": str(_get(template, BUILD_ARGS[1])),
        "template ModelPath": str(_get(template, MODEL_PATH)).removeprefix("models/"),
    }
    for pattern, rel in ((DOCKER_ARG, DOCKERFILE), (MAKE_DEFAULT, MAKEFILE)):
        found = pattern.findall((root / rel).read_text(encoding="utf-8"))
        names[rel] = " | ".join(found) or None  # several lines: a disagreement
    samconfig = root / SAMCONFIG
    text = samconfig.read_text(encoding="utf-8") if samconfig.exists() else None
    for section, overrides in _overrides(text).items():
        value = overrides.get("ModelPath")
        names[f"samconfig [{section}]"] = value.removeprefix("models/") if value else None
    return names


def samconfig_sections(text: str | None) -> list[str]:
    """Sections to set: every one with ``parameter_overrides``, and the deploy defaults."""
    sections = list(_overrides(text))
    default = "default.deploy.parameters"
    return sections if default in sections else [default, *sections]


def _overrides(text: str | None) -> dict[str, dict[str, str]]:
    if text is None:
        return {}
    data = tomllib.loads(text)
    found = {}
    for env, commands in data.items():
        for command, tables in (commands.items() if isinstance(commands, dict) else ()):
            parameters = tables.get("parameters") if isinstance(tables, dict) else None
            value = parameters.get("parameter_overrides") if isinstance(parameters, dict) else None
            if isinstance(value, str):
                found[f"{env}.{command}.parameters"] = dict(
                    item.split("=", 1) for item in shlex.split(value) if "=" in item)
    return found


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


def _replace_one(pattern: re.Pattern[str], text: str, line: str, rel: str) -> str:
    if len(pattern.findall(text)) != 1:
        raise DeployConfigError(f"{rel}: expected exactly one line like {line!r}")
    return pattern.sub(line, text)


def _verify(root: Path, before: dict[str, str | None], name: str) -> None:
    """Parse every file back: the model is NAME everywhere, nothing else differs."""
    after = {rel: (root / rel).read_text(encoding="utf-8") for rel in before}
    expected = parse_yaml(before[TEMPLATE] or "")
    for build_arg in BUILD_ARGS:
        _set(expected, build_arg, name)
    _set(expected, MODEL_PATH, f"models/{name}")
    if parse_yaml(after[TEMPLATE]) != expected:
        raise DeployConfigError(f"{TEMPLATE}: the edit changed more than the model; restored")
    old, new = _overrides(before[SAMCONFIG]), _overrides(after[SAMCONFIG])
    for section, overrides in new.items():
        if {**old.get(section, {}), "ModelPath": f"models/{name}"} != overrides:
            raise DeployConfigError(f"{SAMCONFIG} [{section}]: unexpected overrides; restored")
    names = {where: model for where, model in shipped(root).items() if model is not None}
    if set(names.values()) != {name}:
        raise DeployConfigError(f"files disagree after the edit: {names}; restored")
