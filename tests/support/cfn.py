"""template.yaml as CloudFormation would see it for given parameters: SAM-transformed, then
conditions evaluated (resources whose condition is false dropped, ``Fn::If`` taken, parameter
``Ref``s replaced). Enough of CloudFormation's semantics to assert on one deployment."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from onnx_lambda.source_tree import root

ROOT = root()
TEMPLATE = ROOT / "template.yaml"
NO_VALUE = object()


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def load() -> dict[str, Any]:
    from samtranslator.yaml_helper import yaml_parse

    return yaml_parse(TEMPLATE.read_text())


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """What ``sam build && sam package`` hand to the transform: artifacts uploaded."""
    template = copy.deepcopy(template)
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if props.get("PackageType") == "Image":
            props["ImageUri"] = "123456789012.dkr.ecr.us-east-1.amazonaws.com/onnx-lambda:1"
        for key in ("CodeUri", "ContentUri"):
            if key in props:
                props[key] = "s3://artifacts/code.zip"
    return template


def parameters(template: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    values = {name: spec.get("Default") for name, spec in template["Parameters"].items()}
    unknown = set(overrides) - set(values)
    assert not unknown, f"not template parameters: {unknown}"
    return {**values, **overrides}


def transform(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    from samtranslator.translator.transform import transform as sam_transform

    source = load()
    params = parameters(source, overrides or {})
    return sam_transform(packaged(source), params, _NoManagedPolicies())


def deployed(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The transformed template with every condition decided by the parameters."""
    transformed = transform(overrides)
    params = parameters(load(), overrides or {})
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
