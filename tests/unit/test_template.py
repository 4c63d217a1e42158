"""template.yaml, SAM-transformed and resolved for each cold-start strategy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cfn
from warmer import settings as warmer_settings

STRATEGIES = ("provisioned", "snapstart", "warmer", "none")
ROUTES = {("POST", "/predict"), ("POST", "/v2/models/{name}/infer"),
          ("GET", "/v2/models/{name}"), ("GET", "/v2/models/{name}/ready"), ("GET", "/v2"),
          ("GET", "/v2/health/ready"), ("GET", "/v2/health/live"), ("GET", "/health"),
          ("POST", "/v1/embeddings"), ("POST", "/v1/chat/completions"),
          ("POST", "/v1/completions"), ("GET", "/v1/models"), ("GET", "/v1/models/{model}"),
          ("POST", "/embed"), ("POST", "/rerank"), ("POST", "/tokenize"), ("GET", "/info")}


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def functions(template: dict[str, Any]) -> dict[str, Any]:
    return cfn.of_type(template, "AWS::Lambda::Function")


def aliases(template: dict[str, Any]) -> dict[str, Any]:
    return cfn.of_type(template, "AWS::Lambda::Alias")


def policy_statements(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    props = template["Resources"][role]["Properties"]
    return [s for p in props.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]


def test_cfn_lint_passes() -> None:
    from cfnlint.api import ManualArgs, lint

    matches = lint(cfn.TEMPLATE.read_text(), config=ManualArgs(regions=["us-east-1"]))
    assert [str(m) for m in matches] == []


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_serves_the_routes_through_the_live_alias(strategy: str) -> None:
    template = cfn.deployed({"ColdStartStrategy": strategy})
    zip_variant = strategy == "snapstart"
    function = "InferenceZipFunction" if zip_variant else "InferenceFunction"
    assert set(functions(template)) - {"WarmerFunction"} == {function}
    (alias,) = aliases(template).values()
    assert alias["Properties"]["Name"] == "live"
    assert alias["Properties"]["FunctionName"] == {"Ref": function}

    api = template["Resources"]["InferenceApi"]["Properties"]["Body"]
    routes = {(method.upper(), path) for path, item in api["paths"].items() for method in item}
    assert routes == ROUTES
    for item in api["paths"].values():
        for operation in item.values():
            integration = operation["x-amazon-apigateway-integration"]
            assert integration["payloadFormatVersion"] == "2.0"
            uri, names = integration["uri"]["Fn::Sub"]
            assert uri.endswith(":lambda:path/2015-03-31/functions/${Alias}/invocations")
            assert names == {"Alias": {"Ref": f"{function}Aliaslive"}}
    permissions = [p["Properties"]["FunctionName"]
                   for p in cfn.of_type(template, "AWS::Lambda::Permission").values()
                   if p["Properties"]["Principal"] == "apigateway.amazonaws.com"]
    assert permissions and all(f in ({"Ref": function}, {"Ref": f"{function}Aliaslive"})
                               for f in permissions)

    outputs = template["Outputs"]
    assert outputs["InferenceFunctionName"]["Value"] == {"Ref": function}
    assert outputs["InferenceAliasArn"]["Value"] == {"Ref": f"{function}Aliaslive"}
    assert "/predict" in outputs["PredictUrl"]["Value"]["Fn::Sub"]
    assert ("WarmerFunctionName" in outputs) == (strategy == "warmer")


def test_template_events_and_api_definition_list_the_same_routes() -> None:
    source = cfn.load()
    events = source["Resources"]["InferenceFunction"]["Properties"]["Events"].values()
    from_events = {(e["Properties"]["Method"], e["Properties"]["Path"]) for e in events}
    paths = source["Resources"]["InferenceApi"]["Properties"]["DefinitionBody"]["paths"]
    from_body = {(m.upper(), p) for p, item in paths.items() for m in item}
    assert from_events == from_body == ROUTES


def test_template_routes_are_the_handlers_routes() -> None:
    """Every handler operation is reachable through the deployed API, and every API route
    reaches an operation (the /versions/ spellings are the same operations)."""
    from handler import routes

    reached = {routes.match(method, path.replace("{name}", "m").replace("{model}", "m"))[0]
               for method, path in ROUTES}
    handled = {op for _, methods in routes.ROUTES for op in methods.values()}
    assert reached == handled
    assert len(reached) == len(ROUTES)  # one route per operation, none shadowing another


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("provisioned", [0, 3])
def test_provisioned_concurrency_only_with_its_strategy_and_never_with_snapstart(
        strategy: str, provisioned: int) -> None:
    template = cfn.deployed({"ColdStartStrategy": strategy},
                            settings={"ProvisionedConcurrency": provisioned})
    snapstart = {name for name, f in functions(template).items() if "SnapStart" in f["Properties"]}
    with_pc = {a["Properties"]["FunctionName"]["Ref"] for a in aliases(template).values()
               if "ProvisionedConcurrencyConfig" in a["Properties"]}
    assert not snapstart & with_pc
    assert snapstart == ({"InferenceZipFunction"} if strategy == "snapstart" else set())
    expect_pc = strategy == "provisioned" and provisioned > 0
    assert with_pc == ({"InferenceFunction"} if expect_pc else set())
    assert bool(cfn.of_type(template, "AWS::ApplicationAutoScaling::ScalableTarget")) == expect_pc
    assert ("SpilloverAlarm" in template["Resources"]) == expect_pc


def test_provisioned_strategy_sets_alias_concurrency_and_target_tracking() -> None:
    template = cfn.deployed({"ColdStartStrategy": "provisioned"}, settings={
        "ProvisionedConcurrency": 2, "AutoscalingMinCapacity": 2, "AutoscalingMaxCapacity": 8,
        "AutoscalingTargetUtilization": 0.6})
    alias = template["Resources"]["InferenceFunctionAliaslive"]
    assert alias["Properties"]["ProvisionedConcurrencyConfig"] == {
        "ProvisionedConcurrentExecutions": 2}
    # AllAtOnce through CodeDeploy: no gradual shift fighting the provisioned environments.
    group = template["Resources"]["InferenceFunctionDeploymentGroup"]["Properties"]
    assert group["DeploymentConfigName"]["Fn::Sub"][1] == {"ConfigName": "AllAtOnce"}
    assert "CodeDeployLambdaAliasUpdate" in alias["UpdatePolicy"]

    target = template["Resources"]["ProvisionedConcurrencyTarget"]
    assert target["DependsOn"] == "InferenceFunctionAliaslive"
    props = target["Properties"]
    assert props["ScalableDimension"] == "lambda:function:ProvisionedConcurrency"
    assert props["ServiceNamespace"] == "lambda"
    assert props["ResourceId"] == {"Fn::Sub": "function:${InferenceFunction}:live"}
    assert (props["MinCapacity"], props["MaxCapacity"]) == (2, 8)
    policy = template["Resources"]["ProvisionedConcurrencyScaling"]["Properties"]
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    assert policy["ScalingTargetId"] == {"Ref": "ProvisionedConcurrencyTarget"}
    assert tracking["TargetValue"] == 0.6
    assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == (
        "LambdaProvisionedConcurrencyUtilization")


def test_autoscaling_max_zero_keeps_fixed_provisioned_concurrency() -> None:
    template = cfn.deployed({"ColdStartStrategy": "provisioned"},
                            settings={"AutoscalingMaxCapacity": 0})
    assert "ProvisionedConcurrencyConfig" in (
        template["Resources"]["InferenceFunctionAliaslive"]["Properties"])
    assert not cfn.of_type(template, "AWS::ApplicationAutoScaling::ScalableTarget")


def test_image_function_builds_from_the_dockerfile_and_runs_the_handler() -> None:
    source = cfn.load()["Resources"]["InferenceFunction"]
    assert source["Properties"]["PackageType"] == "Image"
    assert source["Properties"]["ImageConfig"]["Command"] == ["handler.app.handler"]
    metadata = source["Metadata"]
    assert (cfn.ROOT / metadata["DockerContext"] / metadata["Dockerfile"]).is_file()
    assert metadata["DockerTag"]


def test_snapstart_strategy_uses_zip_and_layer_on_python_312() -> None:
    template = cfn.deployed({"ColdStartStrategy": "snapstart"},
                            settings={"Architecture": "arm64"})
    props = functions(template)["InferenceZipFunction"]["Properties"]
    assert props["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert props["Runtime"] == "python3.12"
    assert props["Handler"] == "handler.app.handler"
    assert props["Architectures"] == ["arm64"]
    (layer_name, layer), = cfn.of_type(template, "AWS::Lambda::LayerVersion").items()
    assert props["Layers"] == [{"Ref": layer_name}]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]


def test_makefile_built_resources_have_a_make_target() -> None:
    makefile = (cfn.ROOT / "layers" / "Makefile").read_text()
    source = cfn.load()["Resources"]
    built = [name for name, r in source.items()
             if r.get("Metadata", {}).get("BuildMethod") == "makefile"]
    assert set(built) == {"InferenceZipFunction", "WarmerFunction", "RuntimeLayer"}
    for name in built:
        assert f"\nbuild-{name}:" in makefile


def test_warmer_strategy_schedules_pings_and_may_only_invoke_the_alias() -> None:
    template = cfn.deployed({"ColdStartStrategy": "warmer"}, settings={
        "WarmerConcurrency": 5, "WarmerSchedule": "rate(3 minutes)", "WarmerHoldMs": 150})
    warmer = template["Resources"]["WarmerFunction"]["Properties"]
    assert warmer["Handler"] == "warmer.app.handler"
    assert warmer["Runtime"].startswith("python3.")
    variables = warmer["Environment"]["Variables"]
    assert variables["ONNX_LAMBDA_WARM_TARGET"] == {"Ref": "InferenceFunction"}
    assert variables["ONNX_LAMBDA_WARM_QUALIFIER"] == "live"
    assert variables["ONNX_LAMBDA_WARM_CONCURRENCY"] == 5
    assert variables["ONNX_LAMBDA_WARM_HOLD_MS"] == 150
    # every variable of the warmer's table, and no ONNX_LAMBDA_WARM_* it does not read
    # (Globals give every function ONNX_LAMBDA_TRACING too, which the warmer ignores)
    assert {name for name in variables if name.startswith("ONNX_LAMBDA_WARM_")} | {
        "ONNX_LAMBDA_METRICS_NAMESPACE"} == {var.env_name for var in warmer_settings.VARIABLES}
    assert "ONNX_LAMBDA_METRICS_NAMESPACE" in variables

    (invoke_config,) = cfn.of_type(template, "AWS::Lambda::EventInvokeConfig").values()
    assert invoke_config["Properties"]["MaximumRetryAttempts"] == 0  # the next tick warms

    (rule,) = cfn.of_type(template, "AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == "rate(3 minutes)"
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": ["WarmerFunction", "Arn"]}

    statements = policy_statements(template, "WarmerFunctionRole")
    assert statements == [{"Effect": "Allow", "Action": "lambda:InvokeFunction",
                           "Resource": {"Ref": "InferenceFunctionAliaslive"}}]
    managed = template["Resources"]["WarmerFunctionRole"]["Properties"]["ManagedPolicyArns"]
    assert all("AWSLambdaBasicExecutionRole" in str(arn) for arn in managed)


def test_warmer_concurrency_zero_means_no_warmer() -> None:
    template = cfn.deployed({"ColdStartStrategy": "warmer"}, settings={"WarmerConcurrency": 0})
    assert "WarmerFunction" not in template["Resources"]
    assert not cfn.of_type(template, "AWS::Events::Rule")


@pytest.mark.parametrize("strategy", ["provisioned", "snapstart"])
def test_model_comes_from_the_task_root_unless_an_s3_uri_is_given(strategy: str) -> None:
    function = "InferenceZipFunction" if strategy == "snapstart" else "InferenceFunction"
    local = cfn.deployed({"ColdStartStrategy": strategy})
    variables = local["Resources"][function]["Properties"]["Environment"]["Variables"]
    assert variables["ONNX_LAMBDA_MODEL"] == "models/digits"
    assert variables["ONNX_LAMBDA_METRICS_NAMESPACE"] == "OnnxLambda"
    assert "ModelReadPolicy" not in local["Resources"]
    assert policy_statements(local, f"{function}Role") == []

    uri = "s3://my-models/team/digits"
    remote = cfn.deployed({"ColdStartStrategy": strategy, "ModelS3Uri": uri})
    props = remote["Resources"][function]["Properties"]
    assert props["Environment"]["Variables"]["ONNX_LAMBDA_MODEL"] == uri
    role = remote["Resources"][f"{function}Role"]["Properties"]
    assert {"Ref": "ModelReadPolicy"} in role["ManagedPolicyArns"]
    statements = remote["Resources"]["ModelReadPolicy"]["Properties"]["PolicyDocument"][
        "Statement"]
    assert {s["Action"] for s in statements} == {"s3:GetObject", "s3:ListBucket"}
    assert all("*" not in str(s["Action"]) for s in statements)


@pytest.mark.parametrize(("mode", "scheme"), [
    ("none", None), ("iam", "sigv4"), ("jwt", "jwt"), ("keys", None)])
def test_auth_mode_secures_every_route(mode: str, scheme: str | None) -> None:
    auth = {"jwt": "jwt https://issuer.example client-id",
            "keys": "keys onnx-lambda/api-keys"}.get(mode, mode)
    template = cfn.deployed({"AuthMode": auth})
    variables = template["Resources"]["InferenceFunction"]["Properties"]["Environment"][
        "Variables"]
    # keys: the handler checks them (API Gateway passes the header on), read from the secret
    keys = variables["ONNX_LAMBDA_API_KEYS"]
    if mode == "keys":  # (the Fn::Sub is CloudFormation's to resolve, after the transform)
        text, names = keys["Fn::Sub"]
        keys = text.replace("${Secret}", names["Secret"])
    assert keys == ("{{resolve:secretsmanager:onnx-lambda/api-keys:SecretString}}"
                    if mode == "keys" else "")
    body = template["Resources"]["InferenceApi"]["Properties"]["Body"]
    securities = [op.get("security") for item in body["paths"].values() for op in item.values()]
    assert securities == [[{scheme: []}] if scheme else None] * len(ROUTES)
    schemes = body["components"]["securitySchemes"]
    if mode == "jwt":
        config = schemes["jwt"]["x-amazon-apigateway-authorizer"]["jwtConfiguration"]
        assert config == {"issuer": "https://issuer.example", "audience": ["client-id"]}
    else:
        assert "jwt" not in schemes


def test_api_throttles_and_writes_access_logs() -> None:
    template = cfn.deployed(settings={"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 80,
                                      "LogRetentionDays": 14})
    (stage,) = (s["Properties"] for s in cfn.of_type(template, "AWS::ApiGatewayV2::Stage").values())
    assert stage["StageName"] == "$default"
    assert stage["DefaultRouteSettings"] == {"ThrottlingRateLimit": 50,
                                             "ThrottlingBurstLimit": 80}
    assert stage["AccessLogSettings"]["DestinationArn"] == {
        "Fn::GetAtt": ["InferenceApiAccessLogs", "Arn"]}
    assert '"status":"$context.status"' in stage["AccessLogSettings"]["Format"]
    for group in cfn.of_type(template, "AWS::Logs::LogGroup").values():
        assert group["Properties"]["RetentionInDays"] == 14


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_alarms_watch_the_alias_and_the_handlers_cold_start_metric(strategy: str) -> None:
    template = cfn.deployed({"ColdStartStrategy": strategy}, settings={
        "MetricsNamespace": "Digits", "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:ops"})
    function = "InferenceZipFunction" if strategy == "snapstart" else "InferenceFunction"
    alias_dimensions = [{"Name": "FunctionName", "Value": {"Ref": function}},
                        {"Name": "Resource", "Value": {"Fn::Sub": ["${Name}:live",
                                                                   {"Name": {"Ref": function}}]}}]
    alarms = cfn.of_type(template, "AWS::CloudWatch::Alarm")
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == ["arn:aws:sns:us-east-1:123456789012:ops"]
    assert alarms["ThrottleAlarm"]["Properties"]["Dimensions"] == alias_dimensions
    assert alarms["DurationAlarm"]["Properties"]["ExtendedStatistic"] == "p99"
    error_metrics = {m["Id"]: m for m in alarms["ErrorRateAlarm"]["Properties"]["Metrics"]}
    assert error_metrics["errors"]["MetricStat"]["Metric"]["Dimensions"] == alias_dimensions
    cold = alarms["ColdStartAlarm"]["Properties"]
    assert (cold["Namespace"], cold["MetricName"]) == ("Digits", "ColdStart")
    assert cold["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
    if strategy == "provisioned":
        spill = alarms["SpilloverAlarm"]["Properties"]
        assert spill["MetricName"] == "ProvisionedConcurrencySpilloverInvocations"


def test_alarms_notify_nobody_by_default() -> None:
    alarms = cfn.of_type(cfn.deployed(), "AWS::CloudWatch::Alarm")
    assert alarms and all("AlarmActions" not in a["Properties"] for a in alarms.values())
