"""template.yaml's GPU variant (strategy managed-instances, Settings Accelerator > 0),
SAM-transformed and resolved: a function that asks Lambda for the GPU it runs on
(``AcceleratorConfig``), as an image on x86_64 that requires CUDA, on a capacity provider that
scales on GPU utilisation, behind every route. (cfn-lint over the same settings:
``tests/e2e/test_template_regions.py``.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cfn
from tests.unit.test_template import aliases, functions

SUBNETS = "subnet-0a1,subnet-0b2"
MANAGED = {"ColdStartStrategy": "managed-instances", "CapacityProviderSubnetIds": SUBNETS}


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture(scope="module")
def gpu() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:  # (module scope: before _region applies)
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return cfn.deployed(MANAGED, {"Accelerator": 24, "GpuUtilizationTarget": 55})


def test_the_function_asks_for_the_chosen_accelerator_as_an_x86_image_with_cuda(
        gpu: dict[str, Any]) -> None:
    assert set(functions(gpu)) == {"InferenceGpuFunction"}
    function = gpu["Resources"]["InferenceGpuFunction"]
    props = function["Properties"]
    assert props["AcceleratorConfig"] == {"AcceleratorMemorySize": 24}
    assert props["PackageType"] == "Image" and props["Architectures"] == ["x86_64"]
    assert props["Code"]["ImageUri"].startswith("123456789012.dkr.ecr.")  # sam build's image
    assert props["ImageConfig"]["Command"] == ["handler.app.handler"]
    variables = props["Environment"]["Variables"]
    assert variables["ONNX_LAMBDA_EXECUTION_PROVIDER"] == "cuda"
    assert {"ONNX_LAMBDA_METRICS_NAMESPACE", "ONNX_LAMBDA_TRACING", "ONNX_LAMBDA_MODEL"} <= set(
        variables)  # the Globals' variables too: they do not reach a plain resource
    arn = props["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"][
        "CapacityProviderArn"]["Fn::Sub"]
    assert arn.endswith(":capacity-provider:${InferenceCapacityProvider}")
    assert props["FunctionScalingConfig"] == {"MinExecutionEnvironments": 3,
                                              "MaxExecutionEnvironments": 12}
    assert props["PublishToLatestPublished"] is True
    build = function["Metadata"]["DockerBuildArgs"]
    assert build["RUNTIME_REQUIREMENTS"] == "requirements-gpu.txt"
    assert build["BASE_IMAGE"] == "public.ecr.aws/lambda/python:3.13"
    # the one rule silenced, on this resource only
    assert function["Metadata"]["cfn-lint"]["config"]["ignore_checks"] == ["E3002"]


@pytest.mark.parametrize("size", [3, 6, 12, 16, 24, 48])
def test_the_accelerator_size_is_the_setting(size: int) -> None:
    props = cfn.deployed(MANAGED, {"Accelerator": size})["Resources"]["InferenceGpuFunction"][
        "Properties"]
    assert props["AcceleratorConfig"] == {"AcceleratorMemorySize": size}


def test_the_capacity_provider_scales_on_gpu_utilisation(gpu: dict[str, Any]) -> None:
    (provider,) = cfn.of_type(gpu, "AWS::Lambda::CapacityProvider").values()
    assert provider["Properties"]["CapacityProviderScalingConfig"] == {
        "MaxVCpuCount": 24, "ScalingMode": "Manual",
        "ScalingPolicies": [{"PredefinedMetricType": "LambdaCapacityProviderAverageGPUUtilization",
                             "TargetValue": 55}]}


def test_every_route_and_output_reach_the_gpu_function(gpu: dict[str, Any]) -> None:
    assert not aliases(gpu)  # $LATEST.PUBLISHED, invoked through the unqualified ARN
    body = gpu["Resources"]["InferenceApi"]["Properties"]["Body"]
    targets = {str(op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"][1])
               for item in body["paths"].values() for op in item.values()}
    assert targets == {str({"Alias": {"Fn::GetAtt": ["InferenceGpuFunction", "Arn"]}})}
    (permission,) = cfn.of_type(gpu, "AWS::Lambda::Permission").values()
    assert permission["Properties"]["FunctionName"] == {"Ref": "InferenceGpuFunction"}
    assert gpu["Outputs"]["InferenceFunctionName"]["Value"] == {"Ref": "InferenceGpuFunction"}
    alarm = gpu["Resources"]["ManagedMemoryAlarm"]["Properties"]["Dimensions"]
    assert alarm == [{"Name": "FunctionName", "Value": {"Ref": "InferenceGpuFunction"}}]
    role = gpu["Resources"]["InferenceGpuFunctionRole"]["Properties"]
    assert role["ManagedPolicyArns"] == [{"Fn::Sub": (
        "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole")}]


def test_tracing_and_an_s3_model_reach_the_plain_function() -> None:
    template = cfn.deployed({**MANAGED, "Tracing": "Active",
                             "ModelS3Uri": "s3://bucket/models/digits"}, {"Accelerator": 6})
    props = template["Resources"]["InferenceGpuFunction"]["Properties"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Environment"]["Variables"]["ONNX_LAMBDA_MODEL"] == "s3://bucket/models/digits"
    policies = template["Resources"]["InferenceGpuFunctionRole"]["Properties"]["ManagedPolicyArns"]
    assert {"Ref": "ModelReadPolicy"} in policies
    assert {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSXrayWriteOnlyAccess"} in policies


def test_no_accelerator_keeps_the_sam_function_and_no_gpu_resource() -> None:
    template = cfn.deployed(MANAGED)
    assert set(functions(template)) == {"InferenceManagedFunction"}
    assert "InferenceGpuFunctionRole" not in template["Resources"]
    props = functions(template)["InferenceManagedFunction"]["Properties"]
    assert "AcceleratorConfig" not in props
    assert props["Environment"]["Variables"]["ONNX_LAMBDA_EXECUTION_PROVIDER"] == "auto"
