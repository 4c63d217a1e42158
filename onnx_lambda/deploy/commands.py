"""``onnx-lambda deploy-config models/NAME``: make NAME the model ``sam build && sam deploy`` ships.

One value is set, in place: ``template.yaml``'s ``Mappings: Model: Shipped: Path``, the model's one
home. The image build (``DockerBuildArgs``), the zip build (``layers/Makefile``) and every
function's ``ONNX_LAMBDA_MODEL`` read it; run ``sam build`` afterwards. Only the value changes:
comments and layout stay byte for byte; the template is parsed back and must differ in that
value only, otherwise the command fails (exit 2) and changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "deploy-config", help="make a built model the one `sam build && sam deploy` ships",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a model folder: models/NAME (build-model -o)")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the project root holding template.yaml (default: .)")
    parser.set_defaults(func=run)
    register_regions(subparsers)


def run(args: argparse.Namespace) -> int:
    from onnx_lambda.deploy.shipped_model import (
        TEMPLATE,
        DeployConfigError,
        apply,
        model_name,
        needs_text_requirements,
    )

    try:
        name = model_name(args.root, args.model)
        changed = apply(args.root, name)
    except DeployConfigError as error:
        print(f"onnx-lambda deploy-config: {error}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"  {path}: Mappings Model Shipped Path: models/{name}")
    print(f"{'set' if changed else 'already set'}: models/{name} is what "
          "`sam build && sam deploy` ships (run `sam build` again)")
    if needs_text_requirements(args.root, name):
        print("note: this model takes text (its tokenizer needs the tokenizers package): add "
              "`EXTRA_REQUIREMENTS: requirements-text.txt` beside `MODEL` under "
              f"DockerBuildArgs in {TEMPLATE}", file=sys.stderr)
    return 0


def register_regions(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from onnx_lambda.deploy import regions

    parser = subparsers.add_parser(
        "deploy-regions", help="deploy the stack to several regions behind one latency-routed "
                               "name (sam deploy per region, then global.yaml)",
        description=regions.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("regions", nargs="+", metavar="REGION",
                        help="2 to 4 regions; the first also holds the global stack")
    parser.add_argument("--stack-name", default="onnx-lambda",
                        help="stack name prefix: STACK-REGION, STACK-global (onnx-lambda)")
    parser.add_argument("--model-s3-uri", action="append", default=[], metavar="REGION=URI",
                        help="that region's ModelS3Uri (a bucket in that region); repeatable")
    parser.add_argument("--parameter-overrides", default="", metavar="'K=V ...'",
                        help="passed to every regional sam deploy")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the project root holding template.yaml and global.yaml (.)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands; run and read nothing")
    parser.set_defaults(func=run_regions)


def run_regions(args: argparse.Namespace) -> int:
    import shlex
    import subprocess

    from onnx_lambda.deploy import regions

    try:
        chosen = regions.check_regions(args.regions)
        domain, zone = regions.domain_settings(args.root)
        uris = dict(item.split("=", 1) for item in args.model_s3_uri if "=" in item)
        if len(uris) != len(args.model_s3_uri):
            raise regions.DeployRegionsError("--model-s3-uri wants REGION=s3://BUCKET/KEY")
        commands = regions.regional_commands(chosen, args.stack_name, uris,
                                             args.parameter_overrides)
    except regions.DeployRegionsError as error:
        print(f"onnx-lambda deploy-regions: {error}", file=sys.stderr)
        return 2

    def do(command: list[str]) -> None:
        print("$ " + shlex.join(command), flush=True)
        if not args.dry_run:
            subprocess.run(command, cwd=args.root, check=True)

    try:
        for command in commands:
            do(command)
        if args.dry_run:
            placeholders = {region: {name: f"<{regions.stack_name(args.stack_name, region)} "
                                           f"output {name}>" for name in regions.SLOT_OUTPUTS}
                            for region in chosen}
            outputs = placeholders
        else:
            outputs = {region: regions.stack_outputs(regions.stack_name(args.stack_name, region),
                                                     region) for region in chosen}
        values = regions.global_overrides(domain, zone, outputs, args.stack_name)
        do(regions.global_command(args.stack_name, chosen[0], values))
    except subprocess.CalledProcessError as error:
        print(f"onnx-lambda deploy-regions: {shlex.join(error.cmd)} failed ({error.returncode})",
              file=sys.stderr)
        return 1
    except regions.DeployRegionsError as error:
        print(f"onnx-lambda deploy-regions: {error}", file=sys.stderr)
        return 2
    print(f"https://{domain} answers from the nearest healthy region of {', '.join(chosen)}")
    return 0
