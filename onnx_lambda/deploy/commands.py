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
