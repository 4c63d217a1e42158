"""The ``onnx-lambda`` command. Each area registers its own subcommands; heavy imports stay
inside the commands so ``onnx-lambda --help`` is instant."""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "onnx_lambda.emulator.commands",  # serve, invoke
    "onnx_lambda.build_model.commands",  # build-model, inspect
    "onnx_lambda.bench.commands",  # bench, tune, simulate
    "onnx_lambda.warm.commands",  # warm
    "onnx_lambda.deploy.commands",  # deploy-config
    "onnx_lambda.client.commands",  # probe
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-lambda", description="Low-latency ONNX inference on AWS Lambda.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from onnx_lambda.source_tree import SourceTreeError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SourceTreeError as error:  # a benchmark run from an installed package
        print(f"onnx-lambda {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
