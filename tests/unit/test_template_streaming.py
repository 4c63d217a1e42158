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
