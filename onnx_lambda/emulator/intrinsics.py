"""CloudFormation YAML loading and the intrinsic functions a local run can resolve.

The template is read with PyYAML plus a loader that turns the short tags (``!Ref``,
``!If``, ``!Sub``, ...) into their long JSON form (``{"Ref": ...}``, ``{"Fn::If": ...}``).
:class:`Resolver` then evaluates them against parameter values (defaults < overrides),
pseudo parameters, ``Conditions`` and ``Mappings``. What only exists after a deployment
(``Fn::GetAtt``, ``Fn::ImportValue``, ``Fn::GetAZs``) resolves to a readable placeholder.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

PSEUDO_PARAMETERS = {
    "AWS::AccountId": "123456789012",
    "AWS::Region": "us-east-1",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "onnx-lambda-local",
    "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/onnx-lambda-local/local",
    "AWS::NotificationARNs": [],
}


class NoValue:
    """``AWS::NoValue``: the property it is assigned to disappears."""


NO_VALUE = NoValue()


class TemplateError(ValueError):
    """The template cannot be read or resolved."""


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that understands CloudFormation's short-form tags."""


def _construct(loader: _CfnLoader, tag: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if tag in ("Ref", "Condition"):
        return {tag: value}
    if tag == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{tag}": value}


# every short tag (!Ref, !If, !Sub, ...; the ones a local run cannot resolve fail in Resolver)
_CfnLoader.add_multi_constructor("!", _construct)


def parse_yaml(text: str) -> Any:
    """A CloudFormation/SAM document (YAML or JSON) as plain Python objects, short tags in their
    long JSON form. Data only: a SafeLoader."""
    return yaml.load(text, Loader=_CfnLoader)


def load_yaml(path: Path) -> dict[str, Any]:
    """Read a CloudFormation/SAM template (YAML or JSON) into plain Python objects."""
    try:
        data = parse_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise TemplateError(f"cannot read template {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise TemplateError(f"{path}: not a CloudFormation template (no Resources)")
    return data


_SUB_VAR = re.compile(r"\$\{([^}]+)\}")


class Resolver:
    """Evaluates intrinsic functions of one template with given parameter values."""

    def __init__(self, template: Mapping[str, Any], overrides: Mapping[str, str]) -> None:
        self.template = template
        self.parameters: dict[str, Any] = dict(PSEUDO_PARAMETERS)
        declared = template.get("Parameters") or {}
        unknown = set(overrides) - set(declared)
        if unknown:
            raise TemplateError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        for name, spec in declared.items():
            if name in overrides:
                self.parameters[name] = str(overrides[name])
            elif "Default" in spec:
                self.parameters[name] = spec["Default"]
        self.resources: Mapping[str, Any] = template.get("Resources") or {}
        self._conditions: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions = self.template.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"unknown condition {name!r}")
            self._conditions[name] = bool(self.resolve(conditions[name]))
        return self._conditions[name]

    def resolve(self, node: Any) -> Any:
        """Resolve ``node`` recursively; ``AWS::NoValue`` entries are dropped."""
        if isinstance(node, list):
            items = [self.resolve(item) for item in node]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self._ref(arg)
            if key == "Condition" and isinstance(arg, str):
                return self.condition(arg)
            if key.startswith("Fn::"):
                return self._function(key[4:], arg)
        resolved = {key: self.resolve(value) for key, value in node.items()}
        return {key: value for key, value in resolved.items() if value is not NO_VALUE}

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.parameters:
            return self.parameters[name]
        base = name.split(".", 1)[0]  # SAM's generated refs: MyFunction.Alias, .Version
        if base in self.resources:
            return name
        raise TemplateError(f"Ref to unknown name {name!r} (no default, no override?)")

    def _function(self, name: str, arg: Any) -> Any:
        if name == "If":
            cond, when_true, when_false = arg
            return self.resolve(when_true if self.condition(cond) else when_false)
        value = self.resolve(arg)
        if name == "Equals":
            left, right = (str(v) if isinstance(v, int | float) else v for v in value)
            return left == right
        if name == "Not":
            return not value[0]
        if name == "And":
            return all(value)
        if name == "Or":
            return any(value)
        if name == "Join":
            sep, items = value
            return sep.join(str(item) for item in items)
        if name == "Select":
            index, items = value
            return items[int(index)]
        if name == "Split":
            sep, text = value
            return str(text).split(sep)
        if name == "Sub":
            return self._sub(value)
        if name == "FindInMap":
            mapping, key, sub_key = value
            try:
                return self.template["Mappings"][mapping][key][sub_key]
            except (KeyError, TypeError) as exc:
                raise TemplateError(f"Fn::FindInMap: no {mapping}.{key}.{sub_key}") from exc
        if name == "Base64":
            return base64.b64encode(str(value).encode()).decode()
        if name == "GetAtt":
            return f"<{'.'.join(value)}>"
        if name in ("ImportValue", "GetAZs", "Cidr", "Length", "ToJsonString"):
            return f"<Fn::{name} {value}>"
        raise TemplateError(f"unsupported intrinsic Fn::{name}")

    def _sub(self, value: Any) -> str:
        text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])

        def replace(match: re.Match[str]) -> str:
            expr = match.group(1)
            if expr.startswith("!"):
                return "${" + expr[1:] + "}"
            if expr in variables:
                return str(variables[expr])
            if "." in expr and expr.split(".", 1)[0] in self.resources:
                return f"<{expr}>"
            return str(self._ref(expr))

        return _SUB_VAR.sub(replace, text)
