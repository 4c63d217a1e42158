"""The ``onnx-lambda`` command. Each area registers its own subcommands; heavy imports stay
inside the commands so ``onnx-lambda --help`` is instant."""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "onnx_lambda.emulator.commands",  # serve, invoke
    "onnx_lambda.build_model.commands",  # build-model, inspect
    "onnx_lambda.plan.commands",  # tune, simulate, price
    "onnx_lambda.bench_commands",  # bench (runs the lab of a source checkout)
    "onnx_lambda.warm.commands",  # warm
    "onnx_lambda.deploy.commands",  # deploy-config, deploy-regions
    "onnx_lambda.client.commands",  # probe
    "onnx_lambda.regions.commands",  # regions
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-lambda", description="Low-latency ONNX inference on AWS Lambda.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from onnx_lambda import extras
    from onnx_lambda.source_tree import SourceTreeError

    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest  # a passthrough command's arguments (``bench``: the lab's own)
    try:
        if not getattr(args, "passthrough", False):  # (one checks its own, after its checkout)
            extras.check(args.command)
        return int(args.func(args) or 0)
    except extras.MissingExtraError as error:
        print(error, file=sys.stderr)
        return 2
    except SourceTreeError as error:  # a benchmark run from an installed package
        print(f"onnx-lambda {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
