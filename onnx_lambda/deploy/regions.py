"""``onnx-lambda deploy-regions REGION REGION [...]``: the same stack in each region, then one
latency-routed name in front of them (``global.yaml``), fed by the regional stacks' outputs.

1. ``sam build`` once: the image and the zip are the same in every region;
2. per region, ``sam deploy --region R --stack-name STACK-R --resolve-image-repos``: SAM's
   companion stack gives each region its own ECR repository and the image is pushed there
   (Lambda pulls images from its own region only); ``--model-s3-uri R=s3://...`` sets that
   region's ``ModelS3Uri`` (a bucket in that region, e.g. a replica: docs/how-to/regions.md);
3. each stack's outputs (CloudFormation ``DescribeStacks``, with the caller's credentials);
4. ``sam deploy --template-file global.yaml``: one health-checked latency record per region.

``--dry-run`` prints the commands and reads nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# template.yaml's outputs that global.yaml's region slots are made of, in the slot's order
SLOT_OUTPUTS = ("ApiRegionalDomainName", "ApiRegionalHostedZoneId", "ApiHost",
                "HealthCheckPath")
MIN_REGIONS, MAX_REGIONS = 2, 4  # global.yaml's slots: Region1, Region2 (required), 3, 4
GLOBAL_TEMPLATE = "global.yaml"


class DeployRegionsError(ValueError):
    """A request the wrapper refuses before running anything, or a stack without its outputs."""


def domain_settings(root: Path) -> tuple[str, str]:
    """(CustomDomainName, HostedZoneId) from template.yaml's Settings Api: their one home."""
    from onnx_lambda.emulator.intrinsics import parse_yaml  # (deploy-config's reader too)

    api = parse_yaml((root / "template.yaml").read_text())["Mappings"]["Settings"]["Api"]
    domain, zone = str(api.get("CustomDomainName", "")), str(api.get("HostedZoneId", ""))
    if not domain or not zone:
        raise DeployRegionsError(
            "set Settings > Api > CustomDomainName and HostedZoneId in template.yaml first: "
            "each region serves the API on that name, and global.yaml routes it")
    return domain, zone


def check_regions(regions: Sequence[str]) -> list[str]:
    unique = list(dict.fromkeys(regions))
    if not MIN_REGIONS <= len(unique) <= MAX_REGIONS:
        raise DeployRegionsError(f"give {MIN_REGIONS} to {MAX_REGIONS} distinct regions "
                                 f"(global.yaml's slots), got {len(unique)}")
    return unique


def stack_name(stack: str, region: str) -> str:
    return f"{stack}-{region}"


def regional_commands(regions: Sequence[str], stack: str, model_uris: Mapping[str, str],
                      overrides: str = "") -> list[list[str]]:
    """``sam build`` once, then ``sam deploy`` per region."""
    unknown = set(model_uris) - set(regions)
    if unknown:
        raise DeployRegionsError(f"--model-s3-uri for regions not deployed: {sorted(unknown)}")
    commands = [["sam", "build"]]
    for region in regions:
        command = ["sam", "deploy", "--region", region, "--stack-name",
                   stack_name(stack, region), "--resolve-image-repos", "--resolve-s3",
                   "--capabilities", "CAPABILITY_IAM", "--no-confirm-changeset",
                   "--no-fail-on-empty-changeset"]
        values = " ".join(v for v in (overrides, f"ModelS3Uri={model_uris[region]}"
                                      if region in model_uris else "") if v)
        if values:
            command += ["--parameter-overrides", values]
        commands.append(command)
    return commands


def slot(region: str, outputs: Mapping[str, str], stack: str) -> str:
    """global.yaml's ``RegionN`` value from one regional stack's outputs."""
    missing = [name for name in SLOT_OUTPUTS if not outputs.get(name)]
    if missing:
        raise DeployRegionsError(
            f"stack {stack} ({region}) has no output {', '.join(missing)}: was it deployed "
            "with Settings Api CustomDomainName set?")
    return " ".join([region, *(outputs[name] for name in SLOT_OUTPUTS)])


def global_overrides(domain: str, zone: str,
                     outputs: Mapping[str, Mapping[str, str]], stack: str) -> dict[str, str]:
    """global.yaml's parameters: the domain, its zone, one slot per region (in order)."""
    values = {"DomainName": domain, "HostedZoneId": zone}
    for index, (region, found) in enumerate(outputs.items(), 1):
        values[f"Region{index}"] = slot(region, found, stack_name(stack, region))
    return values


def global_command(stack: str, region: str, values: Mapping[str, str]) -> list[str]:
    pairs = " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items())
    return ["sam", "deploy", "--template-file", GLOBAL_TEMPLATE, "--region", region,
            "--stack-name", f"{stack}-global", "--no-confirm-changeset",
            "--no-fail-on-empty-changeset", "--parameter-overrides", pairs]


def stack_outputs(stack: str, region: str) -> dict[str, str]:
    """A deployed stack's outputs, read with the caller's AWS credentials."""
    import boto3  # the client extra, and only for a real deploy

    client: Any = boto3.client("cloudformation", region_name=region)
    (described,) = client.describe_stacks(StackName=stack)["Stacks"]
    return {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
