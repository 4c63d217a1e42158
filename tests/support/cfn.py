"""template.yaml as CloudFormation would see it for given parameters and settings (the values of
its ``Settings`` mapping, as a user edits them): SAM-transformed, then conditions evaluated
(resources whose condition is false dropped, ``Fn::If`` taken, parameter ``Ref``s and
``Fn::FindInMap`` replaced, ``Fn::Split``/``Fn::Select`` of known values taken). Enough of
CloudFormation's semantics to assert on one deployment."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from onnx_lambda.source_tree import root

ROOT = root()
TEMPLATE = ROOT / "template.yaml"
GLOBAL = ROOT / "global.yaml"  # the latency-routed name in front of several regional stacks
NO_VALUE = object()


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def load(settings: Mapping[str, Any] | None = None, path: Path = TEMPLATE) -> dict[str, Any]:
    """The template; ``settings`` replace values of its ``Settings`` mapping, by name."""
    template = copy.deepcopy(_parsed(path, path.stat().st_mtime_ns))
    if not settings:
        return template
    groups = template["Mappings"]["Settings"]
    for name, value in (settings or {}).items():
        (group,) = [values for values in groups.values() if name in values] or [None]
        assert group is not None, f"not a setting: {name}"
        group[name] = value
    return template


@cache
def _parsed(path: Path, mtime_ns: int) -> dict[str, Any]:
    """``path`` parsed once per version of the file (PyYAML's pure-Python parser: 0.7 s for
    template.yaml, half of a transform)."""
    from samtranslator.yaml_helper import yaml_parse

    parsed: dict[str, Any] = yaml_parse(path.read_text())
    return parsed


def edited(folder: Path, settings: Mapping[str, Any]) -> Path:
    """A copy of template.yaml in ``folder`` with these Settings values, edited as a user would
    (the line of each value, nothing else), beside links to the function packages it names."""
    from onnx_lambda.deploy.shipped_model import yaml_set

    source = load()["Mappings"]["Settings"]
    text = TEMPLATE.read_text()
    for name, value in settings.items():
        (group,) = [group for group, values in source.items() if name in values]
        text = yaml_set(text, ("Mappings", "Settings", group, name), str(value))
    path = folder / TEMPLATE.name
    path.write_text(text)
    for package in ("handler", "warmer"):
        (folder / package).symlink_to(ROOT / package, target_is_directory=True)
    return path


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """What ``sam build && sam package`` hand to the transform: artifacts uploaded."""
    template = copy.deepcopy(template)
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if props.get("PackageType") == "Image":
            uri = "123456789012.dkr.ecr.us-east-1.amazonaws.com/onnx-lambda:1"
            if resource["Type"] == "AWS::Lambda::Function":  # a plain one: Code.ImageUri
                props["Code"] = {"ImageUri": uri}
            else:
                props["ImageUri"] = uri
        for key in ("CodeUri", "ContentUri"):
            if key in props:
                props[key] = "s3://artifacts/code.zip"
    return template


def parameters(template: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    values = {name: spec.get("Default") for name, spec in template["Parameters"].items()}
    unknown = set(overrides) - set(values)
    assert not unknown, f"not template parameters: {unknown}"
    return {**values, **overrides}


def transform(overrides: Mapping[str, Any] | None = None,
              settings: Mapping[str, Any] | None = None,
              path: Path = TEMPLATE) -> dict[str, Any]:
    """SAM's transform of the packaged template: made once per input in a test process (a
    copy each time: ~0.5 s a transform, and many tests ask for the same deployment)."""
    key = json.dumps([str(path), path.stat().st_mtime_ns, overrides or {}, settings or {},
                      [os.environ.get(n) for n in ("AWS_REGION", "AWS_DEFAULT_REGION")]],
                     sort_keys=True, default=repr)
    if key not in _TRANSFORMED:
        from samtranslator.translator.transform import transform as sam_transform

        source = load(settings, path)
        params = parameters(source, overrides or {})
        _TRANSFORMED[key] = sam_transform(packaged(source), params, _NoManagedPolicies())
    return copy.deepcopy(_TRANSFORMED[key])


_TRANSFORMED: dict[str, dict[str, Any]] = {}


def deployed(overrides: Mapping[str, Any] | None = None,
             settings: Mapping[str, Any] | None = None,
             path: Path = TEMPLATE) -> dict[str, Any]:
    """The transformed template with every condition decided by the parameters and settings."""
    transformed = transform(overrides, settings, path)
    params = parameters(load(path=path), overrides or {})
    mappings = transformed.get("Mappings", {})
    conditions: dict[str, bool] = {}
    raw_conditions = transformed.get("Conditions", {})

    def condition(name: str) -> bool:
        if name not in conditions:
            conditions[name] = bool(evaluate(raw_conditions[name]))
        return conditions[name]

    def evaluate(node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (evaluate(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref" and arg == "AWS::NoValue":
                return NO_VALUE
            if key == "Ref" and arg in params:
                return params[arg]
            if key == "Condition":
                return condition(arg)
            if key == "Fn::FindInMap":
                mapping, top, second = (evaluate(v) for v in arg)
                return mappings[mapping][top][second]
            if key == "Fn::Split":
                separator, text = (evaluate(v) for v in arg)
                return text.split(separator) if isinstance(text, str) else node
            if key == "Fn::Sub" and isinstance(arg, str) and "${AWS::" not in arg:
                text = arg  # parameters only (pseudo parameters stay as written)
                for name, value in params.items():
                    text = text.replace("${" + name + "}", str(value))
                return text if "${" not in text else node
            if key == "Fn::Select":
                index, items = (evaluate(v) for v in arg)
                return items[int(index)] if isinstance(items, list) else node
            if key == "Fn::If":
                return evaluate(arg[1] if condition(arg[0]) else arg[2])
            if key == "Fn::Equals":
                left, right = (evaluate(v) for v in arg)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not evaluate(arg[0])
            if key == "Fn::And":
                return all(evaluate(v) for v in arg)
            if key == "Fn::Or":
                return any(evaluate(v) for v in arg)
        return {k: v for k, v in ((k, evaluate(v)) for k, v in node.items()) if v is not NO_VALUE}

    resources = {
        name: evaluate({k: v for k, v in resource.items() if k != "Condition"})
        for name, resource in transformed["Resources"].items()
        if "Condition" not in resource or condition(resource["Condition"])
    }
    outputs = {
        name: evaluate({k: v for k, v in output.items() if k != "Condition"})
        for name, output in transformed.get("Outputs", {}).items()
        if "Condition" not in output or condition(output["Condition"])
    }
    return {"Resources": resources, "Outputs": outputs, "Conditions": conditions}


def of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, Any]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == resource_type}
