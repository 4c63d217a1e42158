"""The dashboard and tracing of template.yaml: SAM-transformed, conditions decided, the body's
Fn::Join / Fn::Sub resolved, for every cold-start strategy the template allows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handler import metric_names
from onnx_lambda.emulator.intrinsics import Resolver
from tests.support import cfn
from warmer import metric_names as warmer_metric_names

STRATEGIES = tuple(cfn.load()["Parameters"]["ColdStartStrategy"]["AllowedValues"])
NAMESPACE = "OnnxLambda"
EMITTED = metric_names.HANDLER | warmer_metric_names.WARMER


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def dashboard(overrides: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body CloudFormation would hand to CloudWatch: transformed, then resolved."""
    transformed = cfn.transform(overrides, settings)
    body = transformed["Resources"]["ObservabilityDashboard"]["Properties"]["DashboardBody"]
    return json.loads(Resolver(transformed, overrides).resolve(body))


def metrics(widget: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, name, dimensions) of each metric row (math expressions skipped)."""
    rows = widget["properties"].get("metrics", [])
    found = []
    for row in rows:
        fields = [f for f in row if not isinstance(f, dict)]
        if fields:
            namespace, name, *dims = fields
            found.append((namespace, name, dict(zip(dims[::2], dims[1::2], strict=True))))
    return found


def all_metrics(body: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    return [m for widget in body["widgets"] for m in metrics(widget)]


def test_each_metric_name_has_one_home() -> None:
    assert not metric_names.HANDLER & warmer_metric_names.WARMER


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_dashboard_is_json_and_names_only_metrics_the_code_emits(strategy: str) -> None:
    body = dashboard({"ColdStartStrategy": strategy})
    found = all_metrics(body)
    ours = {name for namespace, name, _ in found if namespace == NAMESPACE}
    assert ours <= EMITTED, sorted(ours - EMITTED)
    assert ours >= metric_names.HANDLER  # every stage the handler emits is on the dashboard
    assert (ours >= warmer_metric_names.WARMER) == (strategy == "warmer")
    assert not ours & warmer_metric_names.WARMER or strategy == "warmer"
    function = {"snapstart": "InferenceZipFunction",
                "managed-instances": "InferenceManagedFunction"}.get(strategy, "InferenceFunction")
    for namespace, _, dims in found:
        if namespace == NAMESPACE:
            assert dims == {"FunctionName": function}  # the handler's and warmer's dimension
        elif namespace == "AWS/Lambda" and "Resource" in dims:
            assert dims == {"FunctionName": function, "Resource": f"{function}:live"}
    for widget in body["widgets"]:
        assert {"type", "width", "height", "properties"} <= set(widget)
        assert 1 <= widget["width"] <= 24
        assert widget["properties"].get("region", "us-east-1") == "us-east-1"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_widgets_follow_the_strategy(strategy: str) -> None:
    names = {name for _, name, _ in all_metrics(dashboard({"ColdStartStrategy": strategy}))}
    has_pc = strategy == "provisioned"
    assert ("ProvisionedConcurrencyUtilization" in names) == has_pc
    assert ("ProvisionedConcurrencySpilloverInvocations" in names) == has_pc
    queries = [w["properties"]["query"] for w in dashboard(
        {"ColdStartStrategy": strategy})["widgets"] if w["type"] == "log"]
    assert any("Restore Duration" in q for q in queries) == (strategy == "snapstart")
    assert all(q.startswith("SOURCE 'InferenceLogs'") for q in queries)


def test_no_provisioned_widgets_when_provisioned_concurrency_is_zero() -> None:
    names = {name for _, name, _ in all_metrics(dashboard(
        {"ColdStartStrategy": "provisioned"}, {"ProvisionedConcurrency": 0}))}
    assert "ProvisionedConcurrencyUtilization" not in names


def test_rows_fill_the_grid() -> None:
    """No x/y in the body: CloudWatch flows widgets; each row of ours adds up to 24 columns."""
    from benchmarks.dashboard_plot import layout

    for strategy in STRATEGIES:
        placed = layout(dashboard({"ColdStartStrategy": strategy})["widgets"])
        rows: dict[int, int] = {}
        for x, y, width, _, _ in placed:
            rows[y] = max(rows.get(y, 0), x + width)
        assert set(rows.values()) == {24}, (strategy, rows)


def test_dashboard_off_removes_it_and_its_output() -> None:
    off = cfn.deployed(settings={"Dashboard": "off"})
    assert not cfn.of_type(off, "AWS::CloudWatch::Dashboard")
    assert "DashboardUrl" not in off["Outputs"]
    on = cfn.deployed({})
    assert set(cfn.of_type(on, "AWS::CloudWatch::Dashboard")) == {"ObservabilityDashboard"}
    assert "DashboardUrl" in on["Outputs"]


def test_alarms_name_emitted_metrics() -> None:
    template = cfn.deployed({"ColdStartStrategy": "provisioned"})
    for alarm in cfn.of_type(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if props.get("Namespace") == NAMESPACE:
            assert props["MetricName"] in EMITTED


@pytest.mark.parametrize("strategy", ["provisioned", "snapstart", "warmer"])
@pytest.mark.parametrize("tracing", ["Active", "Disabled"])
def test_tracing_switches_active_tracing_the_policy_and_the_handler_setting(
        strategy: str, tracing: str) -> None:
    template = cfn.deployed({"ColdStartStrategy": strategy, "Tracing": tracing})
    functions = cfn.of_type(template, "AWS::Lambda::Function")
    assert functions
    on = tracing == "Active"
    for function in functions.values():
        props = function["Properties"]
        assert props.get("TracingConfig") == ({"Mode": "Active"} if on else None)
        assert props["Environment"]["Variables"]["ONNX_LAMBDA_TRACING"] == ("on" if on else "off")
        # X-Ray's write permission only where traces are written (least privilege)
        role = template["Resources"][props["Role"]["Fn::GetAtt"][0]]["Properties"]
        xray = "AWSXrayWriteOnlyAccess" in str(role.get("ManagedPolicyArns", []))
        assert xray == on
