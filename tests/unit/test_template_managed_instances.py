"""template.yaml's strategy ``managed-instances`` (Lambda Managed Instances), SAM-transformed and
resolved: a capacity provider in the given subnets, the image function on it through ``live``,
nothing of the other strategies; and the GPU property the installed linters cannot check yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import cfn
from tests.unit.test_template import ROUTES, aliases, functions

SUBNETS = "subnet-0a1,subnet-0b2,subnet-0c3"
MANAGED = {"ColdStartStrategy": "managed-instances", "CapacityProviderSubnetIds": SUBNETS}


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def deployed(**settings: Any) -> dict[str, Any]:
    """Strategy managed-instances with these values of the template's Settings mapping."""
    return cfn.deployed(MANAGED, settings)


def capacity_config(template: dict[str, Any]) -> dict[str, Any]:
    props = template["Resources"]["InferenceManagedFunction"]["Properties"]
    return props["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]


def test_the_function_runs_on_the_capacity_provider_through_the_live_alias() -> None:
    template = deployed()
    assert set(functions(template)) == {"InferenceManagedFunction"}
    (alias,) = aliases(template).values()
    assert alias["Properties"]["FunctionName"] == {"Ref": "InferenceManagedFunction"}
    assert alias["Properties"]["Name"] == "live"
    assert "ProvisionedConcurrencyConfig" not in alias["Properties"]

    props = functions(template)["InferenceManagedFunction"]["Properties"]
    assert props["PackageType"] == "Image"
    assert props["ImageConfig"]["Command"] == ["handler.app.handler"]
    assert props["LoggingConfig"]["LogFormat"] == "JSON"
    assert "SnapStart" not in props and "VpcConfig" not in props  # the provider holds the VPC
    arn = capacity_config(template)["CapacityProviderArn"]["Fn::Sub"]
    assert arn.endswith(":capacity-provider:${InferenceCapacityProvider}")
    assert props["FunctionScalingConfig"] == {"MinExecutionEnvironments": 3,
                                              "MaxExecutionEnvironments": 12}

    api = template["Resources"]["InferenceApi"]["Properties"]["Body"]
    assert {(m.upper(), p) for p, item in api["paths"].items() for m in item} == ROUTES
    targets = {str(op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"][1])
               for item in api["paths"].values() for op in item.values()}
    assert targets == {str({"Alias": {"Ref": "InferenceManagedFunctionAliaslive"}})}
    permissions = [p["Properties"] for p in
                   cfn.of_type(template, "AWS::Lambda::Permission").values()]
    assert [p["FunctionName"] for p in permissions] == [
        {"Ref": "InferenceManagedFunctionAliaslive"}]
    outputs = template["Outputs"]
    assert outputs["InferenceFunctionName"]["Value"] == {"Ref": "InferenceManagedFunction"}
    assert outputs["InferenceAliasArn"]["Value"] == {"Ref": "InferenceManagedFunctionAliaslive"}


def test_image_is_built_on_python_313_with_the_same_dockerfile_and_model() -> None:
    source = cfn.load()["Resources"]
    managed, image = source["InferenceManagedFunction"], source["InferenceFunction"]
    build_args = managed["Metadata"]["DockerBuildArgs"]
    assert build_args["BASE_IMAGE"] == "public.ecr.aws/lambda/python:3.13"
    assert build_args["MODEL"] == image["Metadata"]["DockerBuildArgs"]["MODEL"]
    assert managed["Metadata"]["Dockerfile"] == image["Metadata"]["Dockerfile"]
    assert "ARG BASE_IMAGE=" in (cfn.ROOT / managed["Metadata"]["Dockerfile"]).read_text()
    assert managed["Metadata"]["DockerTag"] != image["Metadata"]["DockerTag"]


@pytest.mark.parametrize("strategy", ["provisioned", "snapstart", "warmer", "none"])
def test_other_strategies_create_nothing_of_managed_instances(strategy: str) -> None:
    template = cfn.deployed({"ColdStartStrategy": strategy, "CapacityProviderSubnetIds": SUBNETS})
    assert not cfn.of_type(template, "AWS::Lambda::CapacityProvider")
    assert "InferenceManagedFunction" not in template["Resources"]
    assert "ManagedMemoryAlarm" not in template["Resources"]


@pytest.mark.parametrize("provisioned", [0, 5])
def test_managed_instances_exclude_provisioned_concurrency_snapstart_and_the_warmer(
        provisioned: int) -> None:
    template = deployed(ProvisionedConcurrency=provisioned, WarmerConcurrency=4)
    assert not any("ProvisionedConcurrencyConfig" in a["Properties"]
                   for a in aliases(template).values())
    assert not any("SnapStart" in f["Properties"] for f in functions(template).values())
    assert not cfn.of_type(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert not cfn.of_type(template, "AWS::Lambda::LayerVersion")
    assert "WarmerFunction" not in template["Resources"]
    assert "SpilloverAlarm" not in template["Resources"]


def test_capacity_provider_uses_the_subnets_architecture_types_and_vcpu_ceiling() -> None:
    template = deployed(CapacityProviderSecurityGroupIds="sg-0f1", Architecture="arm64",
                        ManagedInstanceTypes="c7g.large,c7g.xlarge", ManagedInstancesMaxVCpus=48)
    (provider,) = cfn.of_type(template, "AWS::Lambda::CapacityProvider").values()
    props = provider["Properties"]
    assert props["VpcConfig"] == {"SubnetIds": SUBNETS.split(","), "SecurityGroupIds": ["sg-0f1"]}
    assert props["InstanceRequirements"] == {
        "Architectures": ["arm64"], "AllowedInstanceTypes": ["c7g.large", "c7g.xlarge"]}
    assert props["CapacityProviderScalingConfig"]["MaxVCpuCount"] == 48
    assert functions(template)["InferenceManagedFunction"]["Properties"]["Architectures"] == [
        "arm64"]

    role = template["Resources"]["InferenceCapacityProviderOperatorRole"]["Properties"]
    assert props["PermissionsConfig"] == {"CapacityProviderOperatorRoleArn": {
        "Fn::GetAtt": ["InferenceCapacityProviderOperatorRole", "Arn"]}}
    assert role["ManagedPolicyArns"] == [{"Fn::Sub": (
        "arn:${AWS::Partition}:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator")}]
    assert "Policies" not in role  # nothing beyond AWS's scoped operator policy
    assert role["AssumeRolePolicyDocument"]["Statement"] == [{
        "Effect": "Allow", "Principal": {"Service": ["lambda.amazonaws.com"]},
        "Action": ["sts:AssumeRole"]}]


def test_defaults_leave_types_and_security_groups_to_lambda() -> None:
    (provider,) = cfn.of_type(deployed(), "AWS::Lambda::CapacityProvider").values()
    assert provider["Properties"]["VpcConfig"] == {"SubnetIds": SUBNETS.split(","),
                                                   "SecurityGroupIds": []}  # the API's member
    assert provider["Properties"]["InstanceRequirements"] == {"Architectures": ["x86_64"]}
    # CPU: Lambda's own scaling; GPU utilisation policies belong to the GPU variant
    assert provider["Properties"]["CapacityProviderScalingConfig"] == {
        "MaxVCpuCount": 24, "ScalingMode": "Auto"}


@pytest.mark.parametrize(("concurrency", "expected"), [(0, None), (2, 2)])
def test_processes_per_environment_and_memory_per_vcpu_are_settings(
        concurrency: int, expected: int | None) -> None:
    template = deployed(ManagedInstancesConcurrency=concurrency, ManagedInstancesMemoryPerVCpu=4,
                        ManagedInstancesMemorySize=8192)
    config = capacity_config(template)
    assert config.get("PerExecutionEnvironmentMaxConcurrency") == expected  # None: Lambda's 16/vCPU
    assert config["ExecutionEnvironmentMemoryGiBPerVCpu"] == 4
    assert functions(template)["InferenceManagedFunction"]["Properties"]["MemorySize"] == 8192


def test_memory_utilization_alarm_watches_the_function() -> None:
    template = deployed(AlarmMemoryUtilizationPercent=70,
                        AlarmTopicArn="arn:aws:sns:us-east-1:123456789012:ops")
    alarm = template["Resources"]["ManagedMemoryAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/Lambda", "MemoryUtilization")
    assert alarm["Dimensions"] == [{"Name": "FunctionName",
                                    "Value": {"Ref": "InferenceManagedFunction"}}]
    assert alarm["Threshold"] == 70
    assert alarm["AlarmActions"] == ["arn:aws:sns:us-east-1:123456789012:ops"]
    cold = template["Resources"]["ColdStartAlarm"]["Properties"]["Dimensions"]
    assert cold == [{"Name": "FunctionName", "Value": {"Ref": "InferenceManagedFunction"}}]


def test_a_rule_refuses_managed_instances_without_subnets() -> None:
    rule = cfn.load()["Rules"]["ManagedInstancesNeedSubnets"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "ColdStartStrategy"},
                                                    "managed-instances"]}
    (assertion,) = rule["Assertions"]
    assert assertion["Assert"] == {"Fn::Not": [{"Fn::Equals": [
        {"Ref": "CapacityProviderSubnetIds"}, ""]}]}


def environment(template: dict[str, Any]) -> dict[str, Any]:
    (props,) = (f["Properties"] for f in functions(template).values())
    return props["Environment"]["Variables"]


@pytest.mark.parametrize(("accelerator", "types"), [
    ("24", ["g6.xlarge", "g6.2xlarge", "g6.4xlarge"]),
    ("48", ["g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge"]),
])
def test_an_accelerator_selects_gpu_instances_and_requires_cuda(accelerator: str,
                                                                types: list[str]) -> None:
    template = deployed(Accelerator=accelerator)
    (provider,) = cfn.of_type(template, "AWS::Lambda::CapacityProvider").values()
    assert provider["Properties"]["InstanceRequirements"] == {
        "Architectures": ["x86_64"], "AllowedInstanceTypes": types}
    assert environment(template)["ONNX_LAMBDA_EXECUTION_PROVIDER"] == "cuda"
    # explicit types win; no accelerator leaves the choice to the runtime (auto)
    named = deployed(Accelerator=accelerator, ManagedInstanceTypes="g5.xlarge")
    (provider,) = cfn.of_type(named, "AWS::Lambda::CapacityProvider").values()
    assert provider["Properties"]["InstanceRequirements"]["AllowedInstanceTypes"] == ["g5.xlarge"]
    assert environment(deployed())["ONNX_LAMBDA_EXECUTION_PROVIDER"] == "auto"


@pytest.mark.parametrize("strategy", ["provisioned", "snapstart", "warmer", "none"])
def test_an_accelerator_means_nothing_outside_managed_instances(strategy: str) -> None:
    template = cfn.deployed({"ColdStartStrategy": strategy}, {"Accelerator": 24})
    for props in (f["Properties"] for f in functions(template).values()):
        assert "ONNX_LAMBDA_EXECUTION_PROVIDER" not in props["Environment"]["Variables"]
    assert not cfn.of_type(template, "AWS::Lambda::CapacityProvider")


def test_an_accelerator_on_arm64_asks_for_gpu_types_the_architecture_cannot_have() -> None:
    """Lambda's GPUs are x86_64 only: the contradiction fails the deploy instead of a silent
    CPU fallback (no Rule can read a mapping)."""
    template = deployed(Accelerator=24, Architecture="arm64")
    (provider,) = cfn.of_type(template, "AWS::Lambda::CapacityProvider").values()
    requirements = provider["Properties"]["InstanceRequirements"]
    assert requirements["Architectures"] == ["arm64"]
    assert requirements["AllowedInstanceTypes"][0].startswith("g6.")


def test_gpu_accelerator_config_is_not_yet_known_to_the_installed_translator() -> None:
    """``AcceleratorConfig`` (GPU Managed Instances, November 2026) is documented by AWS but
    unknown to aws-sam-translator 1.115, so the GPU variant is a plain ``AWS::Lambda::Function``
    (``InferenceGpuFunction``, test_template_gpu.py). When this test fails, the translator has
    learnt the property: the GPU variant can go back to the SAM function."""
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.translator.transform import transform

    source = cfn.packaged(cfn.load())
    props = source["Resources"]["InferenceManagedFunction"]["Properties"]
    props["AcceleratorConfig"] = {"AcceleratorMemorySize": 24}
    params = cfn.parameters(source, MANAGED)
    with pytest.raises(InvalidDocumentException, match="AcceleratorConfig"):
        transform(source, params, cfn._NoManagedPolicies())


@pytest.mark.parametrize(("overrides", "function"), [
    ({}, "InferenceFunction"),
    ({"ColdStartStrategy": "snapstart"}, "InferenceZipFunction"),
    (MANAGED, "InferenceManagedFunction"),
])
def test_emulator_serves_the_routes_of_every_variant(overrides: dict[str, str],
                                                     function: str) -> None:
    """The variants without ``Events`` are reached through the API's DefinitionBody: `serve`
    must route them as the deployed API does."""
    from onnx_lambda.emulator.template import load_template

    spec = load_template(cfn.TEMPLATE, overrides)
    assert list(spec.functions) == [function]
    assert {(r.method, r.path) for r in spec.routes} == ROUTES
    assert len(spec.routes) == len(ROUTES)
    assert {(r.function, r.kind, r.payload_version) for r in spec.routes} == {
        (function, "http-api", "2.0")}


@pytest.mark.parametrize(("settings", "processes"), [
    ({}, 32),  # 4096 MB at 2 GiB per vCPU: 2 vCPUs x Lambda's 16
    ({"ManagedInstancesMemoryPerVCpu": "4"}, 16),
    ({"ManagedInstancesConcurrency": "3"}, 3),
])
def test_emulator_reads_the_processes_per_environment(settings: dict[str, str], processes: int,
                                                       tmp_path: Path) -> None:
    from onnx_lambda.emulator.template import load_template

    template = cfn.edited(tmp_path, settings)
    spec = load_template(template, MANAGED).functions["InferenceManagedFunction"]
    assert spec.processes_per_environment == processes
    plain = load_template(cfn.TEMPLATE, {}).functions["InferenceFunction"]
    assert plain.processes_per_environment is None
