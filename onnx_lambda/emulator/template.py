"""Read a SAM template into what the emulator serves: functions and HTTP routes.

Only what a local run needs is resolved: resources whose ``Condition`` is false are skipped,
``Globals.Function`` / ``Globals.Api`` / ``Globals.HttpApi`` are merged into each resource
(maps deep-merged, scalars overridden), and each function's properties are resolved with
:class:`~onnx_lambda.emulator.intrinsics.Resolver`.

Function names are the template's logical IDs. Image functions take their handler from
``ImageConfig.Command`` or the Dockerfile's ``CMD`` and run with the ``DockerContext`` as
task root; zip functions run from their ``CodeUri``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnx_lambda.emulator.intrinsics import Resolver, TemplateError, load_yaml
from onnx_lambda.emulator.limits import vcpus_for

DEFAULT_MEMORY_MB = 128
DEFAULT_TIMEOUT_S = 3
FUNCTION_TYPE = "AWS::Serverless::Function"
# An HTTP API integration URI as it resolves here: .../functions/NAME[.Alias]/invocations
_INTEGRATION = re.compile(r"/functions/([A-Za-z0-9]+)(?:\.Alias|\.Version)?/invocations$")


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function as the emulator runs it."""

    name: str
    handler: str
    task_root: Path
    memory_mb: int = DEFAULT_MEMORY_MB
    timeout_s: float = DEFAULT_TIMEOUT_S
    environment: Mapping[str, str] = field(default_factory=dict)
    provisioned: int = 0
    reserved: int | None = None
    alias: str | None = None
    function_url: bool = False
    # a Function URL with InvokeMode RESPONSE_STREAM: the runtime is handler.stream_runtime
    # (response-streaming mode) instead of awslambdaric
    streaming: bool = False
    extra_paths: tuple[Path, ...] = ()
    # Lambda Managed Instances (a CapacityProviderConfig): processes per execution environment
    # and the vCPUs those processes share
    processes_per_environment: int | None = None
    vcpus_per_environment: float | None = None
    # the Lambda runtime it declares ("python3.12": the zip function's Runtime, the image's
    # base tag); None runs as this interpreter's version
    runtime: str | None = None

    @property
    def vcpus(self) -> float:
        """The CPU share of one execution environment: a Managed Instances environment's own,
        else what the memory size buys."""
        if self.vcpus_per_environment is not None:
            return self.vcpus_per_environment
        return vcpus_for(self.memory_mb)


@dataclass(frozen=True)
class RouteSpec:
    """One HTTP route: ``kind`` is ``http-api`` (payload 1.0 or 2.0) or ``rest`` (1.0)."""

    function: str
    method: str  # upper case, or ANY
    path: str  # "/v2/models/{name}", "/{proxy+}", or "$default"
    kind: str
    payload_version: str = "2.0"
    stage: str = "$default"
    binary_media_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class TemplateSpec:
    functions: dict[str, FunctionSpec]
    routes: list[RouteSpec]


def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base.get(key), value) if key in base else value
        return merged
    return override


def _dockerfile_cmd(dockerfile: Path) -> str:
    """The first word of the Dockerfile's last ``CMD`` (exec or shell form)."""
    cmd = None
    for line in dockerfile.read_text().splitlines():
        match = re.match(r"\s*CMD\s+(.+)", line, re.IGNORECASE)
        if match:
            cmd = match.group(1).strip()
    if cmd is None:
        raise TemplateError(f"{dockerfile}: no CMD (set ImageConfig.Command instead)")
    words = json.loads(cmd) if cmd.startswith("[") else cmd.split()
    return str(words[0])


def _dockerfile_runtime(dockerfile: Path, build_args: Mapping[str, Any]) -> str | None:
    """``python3.X`` from the final stage's AWS base image (``public.ecr.aws/lambda/python:3.X``),
    ARG defaults and the template's ``DockerBuildArgs`` substituted; None for other bases."""
    args: dict[str, str] = {}
    image = ""
    for line in dockerfile.read_text().splitlines():
        if match := re.match(r"\s*ARG\s+(\w+)=(\S+)", line, re.IGNORECASE):
            args.setdefault(match.group(1), match.group(2))
        elif match := re.match(r"\s*FROM\s+(\S+)", line, re.IGNORECASE):
            image = match.group(1)
    args.update({str(key): str(value) for key, value in build_args.items()})
    image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), ""), image)
    match = re.search(r"lambda/python:(3\.\d+)", image)
    return f"python{match.group(1)}" if match else None


class _Reader:
    def __init__(self, path: Path, overrides: Mapping[str, str],
                 settings: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.root = path.parent.resolve()
        self.data = load_yaml(path)
        for group, values in (settings or {}).items():  # Mappings: Settings: GROUP: KEY
            try:
                self.data["Mappings"]["Settings"][group].update(values)
            except (KeyError, TypeError, AttributeError) as exc:
                raise TemplateError(f"{path}: no Mappings: Settings: {group}") from exc
        self.resolver = Resolver(self.data, overrides)
        self.globals = self.data.get("Globals") or {}

    def resources(self, type_: str) -> dict[str, dict[str, Any]]:
        """Active resources of one type, logical ID -> resolved Properties (Globals merged)."""
        section = {"AWS::Serverless::Function": "Function", "AWS::Serverless::Api": "Api",
                   "AWS::Serverless::HttpApi": "HttpApi"}[type_]
        found = {}
        for name, resource in (self.data.get("Resources") or {}).items():
            if resource.get("Type") != type_:
                continue
            if "Condition" in resource and not self.resolver.condition(resource["Condition"]):
                continue
            properties = _merge(self.globals.get(section) or {}, resource.get("Properties") or {})
            found[name] = {"Properties": self.resolver.resolve(properties),
                           "Metadata": resource.get("Metadata") or {}}
        return found

    def function(self, name: str, properties: dict[str, Any], metadata: dict[str, Any],
                 ) -> FunctionSpec:
        if properties.get("PackageType") == "Image":
            context = self.root / str(metadata.get("DockerContext", "."))
            command = (properties.get("ImageConfig") or {}).get("Command")
            dockerfile = context / str(metadata.get("Dockerfile", "Dockerfile"))
            handler = str(command[0]) if command else _dockerfile_cmd(dockerfile)
            runtime = _dockerfile_runtime(dockerfile, metadata.get("DockerBuildArgs") or {})
            task_root = context
        else:
            handler = properties.get("Handler")
            code_uri = properties.get("CodeUri", ".")
            if not handler or not isinstance(code_uri, str) or code_uri.startswith("s3://"):
                raise TemplateError(f"{name}: needs Handler and a local CodeUri")
            task_root = self.root / code_uri
            runtime = properties.get("Runtime")
        variables = (properties.get("Environment") or {}).get("Variables") or {}
        provisioned = (properties.get("ProvisionedConcurrencyConfig") or {}).get(
            "ProvisionedConcurrentExecutions", 0)
        reserved = properties.get("ReservedConcurrentExecutions")
        return FunctionSpec(
            name=name,
            handler=str(handler),
            task_root=task_root.resolve(),
            memory_mb=int(properties.get("MemorySize", DEFAULT_MEMORY_MB)),
            timeout_s=float(properties.get("Timeout", DEFAULT_TIMEOUT_S)),
            environment={k: _env_value(v) for k, v in variables.items()},
            provisioned=int(provisioned),
            reserved=None if reserved is None else int(reserved),
            alias=properties.get("AutoPublishAlias"),
            function_url="FunctionUrlConfig" in properties,
            streaming=(properties.get("FunctionUrlConfig") or {}).get("InvokeMode")
            == "RESPONSE_STREAM",
            extra_paths=(self.root,) if task_root.resolve() != self.root else (),
            processes_per_environment=_processes(properties),
            vcpus_per_environment=_vcpus(properties),
            runtime=str(runtime) if runtime else None,
        )

    def routes(self, name: str, properties: dict[str, Any]) -> list[RouteSpec]:
        http_apis = self.resources("AWS::Serverless::HttpApi")
        rest_apis = self.resources("AWS::Serverless::Api")
        routes = []
        for event in (properties.get("Events") or {}).values():
            props = event.get("Properties") or {}
            if event.get("Type") == "HttpApi":
                api = http_apis.get(str(props.get("ApiId")), {}).get("Properties", {})
                routes.append(RouteSpec(
                    function=name,
                    method=str(props.get("Method", "ANY")).upper(),
                    path=str(props.get("Path", "$default")),
                    kind="http-api",
                    payload_version=str(props.get("PayloadFormatVersion", "2.0")),
                    stage=str(api.get("StageName", "$default")),
                ))
            elif event.get("Type") == "Api":
                api = rest_apis.get(str(props.get("RestApiId")), {}).get("Properties", {})
                if not api:
                    api = self.globals.get("Api") or {}
                routes.append(RouteSpec(
                    function=name,
                    method=str(props.get("Method", "ANY")).upper(),
                    path=str(props["Path"]),
                    kind="rest",
                    payload_version="1.0",
                    stage=str(self.resolver.resolve(api.get("StageName", "Prod"))),
                    binary_media_types=tuple(
                        t.replace("~1", "/") for t in api.get("BinaryMediaTypes") or ()),
                ))
        return routes

    def definition_routes(self, functions: Mapping[str, Any]) -> list[RouteSpec]:
        """Routes an HttpApi's OpenAPI ``DefinitionBody`` points at an active function: how
        the template reaches its variants that have no ``Events`` of their own (the zip +
        layer and the Managed Instances functions)."""
        routes = []
        for api in self.resources("AWS::Serverless::HttpApi").values():
            props = api["Properties"]
            paths = (props.get("DefinitionBody") or {}).get("paths") or {}
            for path, item in paths.items():
                for method, operation in item.items():
                    integration = operation.get("x-amazon-apigateway-integration") or {}
                    found = _INTEGRATION.search(str(integration.get("uri", "")))
                    if found is None or found.group(1) not in functions:
                        continue
                    routes.append(RouteSpec(
                        function=found.group(1), method=method.upper(), path=path,
                        kind="http-api",
                        payload_version=str(integration.get("payloadFormatVersion", "2.0")),
                        stage=str(props.get("StageName", "$default"))))
        return routes


def _processes(properties: Mapping[str, Any]) -> int | None:
    """Python processes per Managed Instances environment: the configured maximum
    concurrency, else Lambda's default of 16 per vCPU."""
    config = properties.get("CapacityProviderConfig")
    vcpus = _vcpus(properties)
    if not isinstance(config, dict) or vcpus is None:
        return None
    if config.get("PerExecutionEnvironmentMaxConcurrency"):
        return int(config["PerExecutionEnvironmentMaxConcurrency"])
    return 16 * int(vcpus)


def _vcpus(properties: Mapping[str, Any]) -> float | None:
    """A Managed Instances environment's vCPUs: its memory divided by
    ``ExecutionEnvironmentMemoryGiBPerVCpu`` (whole vCPUs, at least one)."""
    config = properties.get("CapacityProviderConfig")
    if not isinstance(config, dict):
        return None
    ratio = float(config.get("ExecutionEnvironmentMemoryGiBPerVCpu", 2))
    memory_mb = int(properties.get("MemorySize", DEFAULT_MEMORY_MB))
    return float(max(1, round(memory_mb / 1024.0 / ratio)))


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_template(path: str | Path, parameter_overrides: Mapping[str, str] | None = None,
                  settings: Mapping[str, Mapping[str, str]] | None = None) -> TemplateSpec:
    """Read ``path`` (a SAM template) with optional parameter overrides, and ``settings``
    overriding values of its ``Mappings: Settings`` (``{"Streaming": {"StreamingUrl":
    "enabled"}}``: what ``serve --streaming-url`` changes, the template file untouched)."""
    reader = _Reader(Path(path), parameter_overrides or {}, settings)
    functions: dict[str, FunctionSpec] = {}
    routes: list[RouteSpec] = []
    for name, resource in reader.resources(FUNCTION_TYPE).items():
        functions[name] = reader.function(name, resource["Properties"], resource["Metadata"])
        routes.extend(reader.routes(name, resource["Properties"]))
    if not functions:
        raise TemplateError(f"{path}: no active {FUNCTION_TYPE}")
    covered = {(route.method, route.path) for route in routes}
    routes += [route for route in reader.definition_routes(functions)
               if (route.method, route.path) not in covered]
    return TemplateSpec(functions=functions, routes=routes)


def parse_overrides(text: str | None) -> dict[str, str]:
    """SAM's ``--parameter-overrides`` syntax: ``Key=Value Key2=Value2`` (also
    ``ParameterKey=K,ParameterValue=V``)."""
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split():
        long_form = re.fullmatch(r"ParameterKey=([^,]+),ParameterValue=(.*)", item)
        if long_form:
            result[long_form.group(1)] = long_form.group(2)
        elif "=" in item:
            key, value = item.split("=", 1)
            result[key] = value
        else:
            raise TemplateError(f"bad parameter override {item!r} (want Key=Value)")
    return result
