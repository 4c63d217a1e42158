"""Reading SAM templates: intrinsic functions, conditions, Globals, image handlers."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnx_lambda.emulator.intrinsics import Resolver, TemplateError, parse_yaml
from onnx_lambda.emulator.template import load_template, parse_overrides
from onnx_lambda.source_tree import root

ROOT = root()
TEMPLATE = """
Parameters:
  Memory: {Type: Number, Default: 1024}
  Stage: {Type: String, Default: prod}
  Uri: {Type: String, Default: ""}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  HasUri: !Not [!Equals [!Ref Uri, ""]]
  Both: !And [!Condition IsProd, !Condition HasUri]
Mappings:
  Sizes: {prod: {threads: 4}, dev: {threads: 1}}
Globals:
  Function:
    Timeout: 7
    Environment: {Variables: {SHARED: g, OVERRIDDEN: g}}
  Api:
    BinaryMediaTypes: [application~1octet-stream]
Resources:
  Image:
    Type: AWS::Serverless::Function
    Properties:
      PackageType: Image
      MemorySize: !Ref Memory
      AutoPublishAlias: live
      ProvisionedConcurrencyConfig: !If
        - IsProd
        - ProvisionedConcurrentExecutions: 2
        - !Ref AWS::NoValue
      Environment:
        Variables:
          OVERRIDDEN: f
          MODEL: !If [HasUri, !Ref Uri, models/digits]
          NAME: !Sub "${AWS::StackName}-${Stage}"
          LIST: !Join [",", [a, !Select [1, !Split ["/", "x/y/z"]]]]
          THREADS: !FindInMap [Sizes, !Ref Stage, threads]
          ARN: !GetAtt Image.Arn
          FLAG: true
      Events:
        Predict: {Type: HttpApi, Properties: {ApiId: !Ref Http, Method: post, Path: /predict}}
        Rest: {Type: Api, Properties: {Method: GET, Path: "/items/{id}"}}
    Metadata: {DockerContext: ., Dockerfile: Dockerfile}
  Zip:
    Type: AWS::Serverless::Function
    Condition: IsProd
    Properties: {CodeUri: src, Handler: app.handler, ReservedConcurrentExecutions: 3,
                 FunctionUrlConfig: {AuthType: NONE}}
  Skipped:
    Type: AWS::Serverless::Function
    Condition: Both
    Properties: {CodeUri: src, Handler: app.handler}
  Http:
    Type: AWS::Serverless::HttpApi
    Properties: {StageName: v1}
"""


@pytest.fixture
def template(tmp_path: Path) -> Path:
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    (tmp_path / "Dockerfile").write_text('FROM x\nCMD ["ignored"]\nCMD ["pkg.mod.fn"]\n')
    return tmp_path / "template.yaml"


def test_functions_resolved(template: Path) -> None:
    spec = load_template(template)
    assert set(spec.functions) == {"Image", "Zip"}  # Skipped: condition false
    image = spec.functions["Image"]
    assert image.handler == "pkg.mod.fn"  # the Dockerfile's last CMD
    assert image.task_root == template.parent.resolve()
    assert image.memory_mb == 1024 and image.timeout_s == 7.0
    assert image.provisioned == 2 and image.alias == "live"
    assert image.environment == {
        "SHARED": "g", "OVERRIDDEN": "f", "MODEL": "models/digits",
        "NAME": "onnx-lambda-local-prod", "LIST": "a,y", "THREADS": "4",
        "ARN": "<Image.Arn>", "FLAG": "true"}
    zipped = spec.functions["Zip"]
    assert zipped.task_root == (template.parent / "src").resolve()
    assert zipped.reserved == 3 and zipped.function_url
    assert zipped.extra_paths == (template.parent.resolve(),)


def test_routes(template: Path) -> None:
    routes = {(r.kind, r.method, r.path, r.stage): r for r in load_template(template).routes}
    assert ("http-api", "POST", "/predict", "v1") in routes
    rest = routes[("rest", "GET", "/items/{id}", "Prod")]
    assert rest.payload_version == "1.0"
    assert rest.binary_media_types == ("application/octet-stream",)


def test_parameter_overrides(template: Path) -> None:
    spec = load_template(template, {"Stage": "dev", "Uri": "s3://b/k", "Memory": "512"})
    assert set(spec.functions) == {"Image"}
    image = spec.functions["Image"]
    assert image.provisioned == 0 and image.memory_mb == 512
    assert image.environment["MODEL"] == "s3://b/k"
    with pytest.raises(TemplateError, match="unknown parameter"):
        load_template(template, {"Nope": "1"})


def test_parse_overrides() -> None:
    assert parse_overrides("A=1 B=x=y") == {"A": "1", "B": "x=y"}
    assert parse_overrides("ParameterKey=A,ParameterValue=1") == {"A": "1"}
    assert parse_overrides(None) == {}
    with pytest.raises(TemplateError):
        parse_overrides("novalue")


def test_resolver_sub_forms_and_errors() -> None:
    resolver = Resolver({"Parameters": {"P": {"Default": "v"}}, "Resources": {"R": {}}}, {})
    assert resolver.resolve({"Fn::Sub": "${P}-${!Literal}-${R.Arn}"}) == "v-${Literal}-<R.Arn>"
    assert resolver.resolve({"Fn::Sub": ["${X}/${P}", {"X": "x"}]}) == "x/v"
    assert resolver.resolve({"Ref": "R"}) == "R"
    with pytest.raises(TemplateError):
        resolver.resolve({"Ref": "Missing"})


def test_project_template() -> None:
    """The repository's own template: the inference function and its routes."""
    spec = load_template(ROOT / "template.yaml")
    function = spec.functions["InferenceFunction"]
    assert function.handler == "handler.app.handler"
    assert function.environment["ONNX_LAMBDA_MODEL"] == "models/digits"
    assert function.alias == "live"
    assert {(r.method, r.path) for r in spec.routes if r.function == "InferenceFunction"} >= {
        ("POST", "/predict"), ("GET", "/health")}


def test_runtime_from_zip_runtime_or_image_base() -> None:
    """The zip function's ``Runtime``; an image function's AWS base-image tag, the Dockerfile's
    ``ARG`` default overridden by ``DockerBuildArgs`` (Managed Instances build on 3.13)."""
    managed = {"ColdStartStrategy": "managed-instances", "CapacityProviderSubnetIds": "subnet-1"}
    runtimes = {name: function.runtime
                for overrides in ({}, {"ColdStartStrategy": "snapstart"}, managed)
                for name, function in load_template(ROOT / "template.yaml",
                                                    overrides).functions.items()}
    assert runtimes == {"InferenceFunction": "python3.12", "InferenceZipFunction": "python3.12",
                        "InferenceManagedFunction": "python3.13"}


def test_image_runtime_is_none_for_a_non_aws_base(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text('FROM python:3.12-slim\nCMD ["app.handler"]\n')
    (tmp_path / "template.yaml").write_text(
        "Resources:\n  F:\n    Type: AWS::Serverless::Function\n"
        "    Properties: {PackageType: Image}\n    Metadata: {DockerContext: .}\n")
    assert load_template(tmp_path / "template.yaml").functions["F"].runtime is None


def test_short_tags_take_their_long_form() -> None:
    """One loader for every reader of templates (the emulator, deploy-config): any short tag,
    including ones no local run resolves, parses; Resolver decides what it can evaluate."""
    assert parse_yaml("A: !Ref B\nC: !GetAtt X.Arn\nD: !Condition E\nF: !Transform {Name: x}\n"
                      "G: !If [H, 1, 2]\n") == {
        "A": {"Ref": "B"}, "C": {"Fn::GetAtt": ["X", "Arn"]}, "D": {"Condition": "E"},
        "F": {"Fn::Transform": {"Name": "x"}}, "G": {"Fn::If": ["H", 1, 2]}}
