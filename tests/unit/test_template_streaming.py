"""template.yaml's streaming Function URL (Settings Streaming StreamingUrl ``enabled``): the
same image run by handler.stream_runtime behind a RESPONSE_STREAM URL on the live alias, secured as
AuthMode says, absent by default and outside the image strategies; and the emulator reads it
as a streaming function."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import cfn
from tests.unit.test_template import functions

ON = {"StreamingUrl": "enabled"}


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def urls(template: dict[str, Any]) -> dict[str, Any]:
    return cfn.of_type(template, "AWS::Lambda::Url")


@pytest.mark.parametrize("strategy", ["provisioned", "snapstart", "warmer", "none",
                                      "managed-instances"])
def test_off_by_default(strategy: str) -> None:
    overrides = {"ColdStartStrategy": strategy, "CapacityProviderSubnetIds": "subnet-0a1"}
    template = cfn.deployed(overrides)
    assert "StreamingFunction" not in functions(template) and not urls(template)
    assert "StreamingUrl" not in template.get("Outputs", {})


def test_on_streams_the_image_through_its_own_runtime_loop() -> None:
    template = cfn.deployed({}, ON)
    props = functions(template)["StreamingFunction"]["Properties"]
    assert props["PackageType"] == "Image"
    assert props["ImageConfig"]["EntryPoint"] == ["/var/lang/bin/python3", "-m",
                                                 "handler.stream_runtime"]
    assert props["ImageConfig"]["Command"] == ["handler.app.stream_handler"]
    assert props["Timeout"] == 300
    inference = functions(template)["InferenceFunction"]["Properties"]
    assert props["Environment"] == inference["Environment"]  # the same model
    (url,) = urls(template).values()
    assert url["Properties"]["InvokeMode"] == "RESPONSE_STREAM"
    assert url["Properties"]["TargetFunctionArn"] == {"Ref": "StreamingFunctionAliaslive"}
    assert "StreamingUrl" in template["Outputs"]


@pytest.mark.parametrize(("mode", "auth_type"), [
    ("none", "NONE"), ("iam", "AWS_IAM"), ("jwt https://issuer.example client-id", "AWS_IAM"),
    ("keys onnx-lambda/api-keys", "NONE")])
def test_auth_mode_secures_the_url(mode: str, auth_type: str) -> None:
    """A Function URL cannot check a JWT: under jwt it takes SigV4 (fails closed)."""
    (url,) = urls(cfn.deployed({"AuthMode": mode}, ON)).values()
    assert url["Properties"]["AuthType"] == auth_type


@pytest.mark.parametrize("strategy", ["snapstart", "managed-instances"])
def test_only_the_image_strategies_stream(strategy: str) -> None:
    overrides = {"ColdStartStrategy": strategy, "CapacityProviderSubnetIds": "subnet-0a1"}
    assert "StreamingFunction" not in functions(cfn.deployed(overrides, ON))


def test_cfn_lint_passes_with_streaming_on(tmp_path: Path) -> None:
    from cfnlint.api import ManualArgs, lint

    text = cfn.edited(tmp_path, ON).read_text()
    assert [str(m) for m in lint(text, config=ManualArgs(regions=["us-east-1"]))] == []


def test_emulator_runs_it_in_streaming_mode(tmp_path: Path) -> None:
    from onnx_lambda.emulator.template import load_template

    spec = load_template(cfn.edited(tmp_path, ON)).functions
    streaming = spec["StreamingFunction"]
    assert streaming.streaming and streaming.function_url and streaming.alias == "live"
    assert streaming.handler == "handler.app.stream_handler"
    assert not spec["InferenceFunction"].streaming


API_ON = {**ON, "StreamingApi": "enabled"}
GENERATION_ROUTES = {"/v1/chat/completions", "/v1/completions"}


@pytest.mark.parametrize(("mode", "open_to_handler"), [
    ("none", True), ("keys onnx-lambda/api-keys", True), ("iam", False),
    ("jwt https://issuer.example client-id", False)])
def test_the_rest_api_streams_the_generation_routes(mode: str, open_to_handler: bool) -> None:
    """API Gateway's own streaming: a REST API whose integrations call the live alias through
    InvokeWithResponseStream (responseTransferMode STREAM), secured as the Function URL is."""
    template = cfn.deployed({"AuthMode": mode}, API_ON)
    apis = cfn.of_type(template, "AWS::ApiGateway::RestApi")
    assert list(apis) == ["StreamingApi"]
    body = apis["StreamingApi"]["Properties"]["Body"]
    assert set(body["paths"]) == GENERATION_ROUTES
    for item in body["paths"].values():
        integration = item["post"]["x-amazon-apigateway-integration"]
        assert integration["type"] == "aws_proxy"
        assert integration["responseTransferMode"] == "STREAM"
        uri = integration["uri"]["Fn::Sub"]
        assert uri.endswith("/2021-11-15/functions/${StreamingFunctionAliaslive}/"
                            "response-streaming-invocations")
        assert item["post"].get("security") == (None if open_to_handler else [{"sigv4": []}])
    permission = cfn.of_type(template, "AWS::Lambda::Permission")["StreamingApiPermission"]
    assert permission["Properties"]["FunctionName"] == {"Ref": "StreamingFunctionAliaslive"}
    assert permission["Properties"]["Principal"] == "apigateway.amazonaws.com"
    assert "StreamingApiUrl" in template["Outputs"]


def test_the_rest_api_is_off_unless_asked_and_needs_the_streaming_function() -> None:
    for settings in ({}, ON, {"StreamingApi": "enabled"}):
        template = cfn.deployed({}, settings)
        assert not cfn.of_type(template, "AWS::ApiGateway::RestApi")
        assert "StreamingApiUrl" not in template.get("Outputs", {})


def test_cfn_lint_passes_with_the_streaming_api_on(tmp_path: Path) -> None:
    from cfnlint.api import ManualArgs, lint

    text = cfn.edited(tmp_path, API_ON).read_text()
    assert [str(m) for m in lint(text, config=ManualArgs(regions=["us-east-1"]))] == []
