"""Several regions behind one name: template.yaml's custom domain and the outputs global.yaml
is made of, global.yaml resolved for 2 to 4 regions (one latency record per region, each with
its health check on that region's own API), and ``deploy-regions`` building the one from the
other. (cfn-lint and ``sam validate --lint``: ``tests/e2e/test_template_regions.py``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.cli import main
from onnx_lambda.deploy import regions
from tests.support import cfn

DOMAIN = {"CustomDomainName": "api.example.com", "HostedZoneId": "Z0123456789ABC"}


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")


def outputs_of(region: str) -> dict[str, str]:
    """What DescribeStacks returns for a regional stack (the values CloudFormation resolves)."""
    api = f"abc{region[-1]}"
    return {"ApiRegionalDomainName": f"d-{api}.execute-api.{region}.amazonaws.com",
            "ApiRegionalHostedZoneId": f"ZONE{region.upper()}",
            "ApiHost": f"{api}.execute-api.{region}.amazonaws.com", "HealthCheckPath": "/health",
            "ApiUrl": f"https://{api}.execute-api.{region}.amazonaws.com"}


def test_the_regional_stack_serves_its_api_on_the_custom_domain() -> None:
    template = cfn.deployed({}, DOMAIN)
    resources = template["Resources"]
    cert = resources["ApiCertificate"]["Properties"]
    assert cert["DomainName"] == "api.example.com" and cert["ValidationMethod"] == "DNS"
    assert cert["DomainValidationOptions"] == [{"DomainName": "api.example.com",
                                                "HostedZoneId": "Z0123456789ABC"}]
    (config,) = resources["ApiDomainName"]["Properties"]["DomainNameConfigurations"]
    assert config == {"CertificateArn": {"Ref": "ApiCertificate"}, "EndpointType": "REGIONAL",
                      "SecurityPolicy": "TLS_1_2"}
    mapping = resources["ApiDomainMapping"]["Properties"]
    assert mapping["ApiId"] == {"Ref": "InferenceApi"}
    assert mapping["Stage"] == {"Ref": "InferenceApiStage"}
    assert resources["InferenceApiStage"]["Type"] == "AWS::ApiGatewayV2::Stage"
    # the outputs global.yaml's region slot is made of, in its order
    outputs = template["Outputs"]
    assert set(regions.SLOT_OUTPUTS) <= set(outputs)
    assert outputs["ApiRegionalDomainName"]["Value"] == {
        "Fn::GetAtt": ["ApiDomainName", "RegionalDomainName"]}
    assert outputs["ApiRegionalHostedZoneId"]["Value"] == {
        "Fn::GetAtt": ["ApiDomainName", "RegionalHostedZoneId"]}
    assert outputs["HealthCheckPath"]["Value"] == "/health"
    assert "/health" in {p for p in resources["InferenceApi"]["Properties"]["Body"]["paths"]}


def test_without_a_domain_nothing_of_it_is_made() -> None:
    template = cfn.deployed()
    assert not {"ApiCertificate", "ApiDomainName", "ApiDomainMapping"} & set(
        template["Resources"])
    assert "ApiRegionalDomainName" not in template["Outputs"]
    named = cfn.deployed({}, {"StageName": "prod"})["Outputs"]["HealthCheckPath"]["Value"]
    assert named == {"Fn::Sub": ["/${StageName}/health", {"StageName": "prod"}]}


def deployed_global(region_names: list[str]) -> dict[str, Any]:
    values = regions.global_overrides("api.example.com", "Z0123456789ABC",
                                      {r: outputs_of(r) for r in region_names}, "onnx-lambda")
    return cfn.deployed(values, path=cfn.GLOBAL)


@pytest.mark.parametrize("names", [["eu-west-1", "us-east-1"],
                                   ["eu-west-1", "us-east-1", "ap-southeast-2"],
                                   ["eu-west-1", "us-east-1", "ap-southeast-2", "sa-east-1"]])
def test_one_health_checked_latency_record_per_region(names: list[str]) -> None:
    template = deployed_global(names)
    records = cfn.of_type(template, "AWS::Route53::RecordSet")
    checks = cfn.of_type(template, "AWS::Route53::HealthCheck")
    assert len(records) == len(checks) == len(names)
    by_region = {r["Properties"]["Region"]: r["Properties"] for r in records.values()}
    assert sorted(by_region) == sorted(names)
    for region, props in by_region.items():
        fed = outputs_of(region)
        assert props["SetIdentifier"] == region  # latency routing: one set per region
        assert (props["Name"], props["Type"], props["HostedZoneId"]) == (
            "api.example.com", "A", "Z0123456789ABC")
        assert props["AliasTarget"] == {"DNSName": fed["ApiRegionalDomainName"],
                                        "HostedZoneId": fed["ApiRegionalHostedZoneId"],
                                        "EvaluateTargetHealth": False}
        check = checks[props["HealthCheckId"]["Ref"]]["Properties"]["HealthCheckConfig"]
        assert check["FullyQualifiedDomainName"] == fed["ApiHost"]  # the region itself
        assert check["ResourcePath"] == fed["HealthCheckPath"]
        assert (check["Type"], check["Port"], check["EnableSNI"]) == ("HTTPS", 443, True)
        assert check["FailureThreshold"] == 3
    assert template["Outputs"]["Url"]["Value"] == "https://api.example.com"


def test_deploy_regions_refuses_what_global_yaml_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(regions.DeployRegionsError, match="2 to 4 distinct regions"):
        regions.check_regions(["eu-west-1", "eu-west-1"])
    with pytest.raises(regions.DeployRegionsError, match="2 to 4"):
        regions.check_regions(["a-b-1", "a-b-2", "a-b-3", "a-b-4", "a-b-5"])
    outputs = outputs_of("eu-west-1")
    del outputs["ApiRegionalDomainName"]
    with pytest.raises(regions.DeployRegionsError, match="no output ApiRegionalDomainName"):
        regions.slot("eu-west-1", outputs, "onnx-lambda-eu-west-1")
    (tmp_path / "template.yaml").write_text(cfn.TEMPLATE.read_text())
    with pytest.raises(regions.DeployRegionsError, match="CustomDomainName"):
        regions.domain_settings(tmp_path)


def test_deploy_regions_dry_run_prints_each_step(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    text = cfn.TEMPLATE.read_text()
    for name, value in DOMAIN.items():  # as a user edits Settings Api
        assert text.count(f'      {name}: ""') == 1
        text = text.replace(f'      {name}: ""', f"      {name}: {value}")
    (tmp_path / "template.yaml").write_text(text)
    assert regions.domain_settings(tmp_path) == ("api.example.com", "Z0123456789ABC")
    code = main(["deploy-regions", "eu-west-1", "us-east-1", "--root", str(tmp_path),
                 "--model-s3-uri", "us-east-1=s3://models-us-east-1/digits", "--dry-run"])
    assert code == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("$ ")]
    assert lines[0] == "$ sam build"
    assert lines[1].startswith("$ sam deploy --region eu-west-1 --stack-name "
                               "onnx-lambda-eu-west-1 --resolve-image-repos")
    assert "ModelS3Uri=s3://models-us-east-1/digits" in lines[2]
    assert "ModelS3Uri" not in lines[1]
    assert lines[3].startswith("$ sam deploy --template-file global.yaml --region eu-west-1")
    assert "DomainName=api.example.com" in lines[3] and "Region2=" in lines[3]
    assert len(lines) == 4
    assert main(["deploy-regions", "eu-west-1", "us-east-1", "--root", str(tmp_path),
                 "--model-s3-uri", "ap-south-1=s3://b/k", "--dry-run"]) == 2
