"""What ``serve`` and ``invoke`` share: the template and environment options, the emulator
they configure, and how a failure is reported."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--template", "-t", default="template.yaml",
                        help="SAM template (default: template.yaml)")
    parser.add_argument("--parameter-overrides", default=None, metavar="'K=V K2=V2'",
                        help="template parameter values, SAM syntax")
    parser.add_argument("--env-vars", "-n", type=Path, default=None, metavar="FILE.json",
                        help='environment overrides, SAM format: {"Parameters": {...}, '
                             '"FunctionName": {...}}')
    parser.add_argument("--model", default=None, metavar="PATH",
                        help="serve this model: ONNX_LAMBDA_MODEL of every function (a model "
                             "folder, .onnx file or s3:// URI; default: the template's)")
    parser.add_argument("--memory", type=int, default=None, metavar="MB",
                        help="override every function's MemorySize")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="override every function's Timeout")
    parser.add_argument("--cpu-limit", choices=("auto", "cfs-quota", "pinned", "off"),
                        default="auto", help="how the CPU share of the memory size is enforced "
                        "(auto: cgroup CFS quota if writable, else core pinning)")
    parser.add_argument("--no-memory-limit", action="store_true",
                        help="measure memory but never kill an environment over its size")


def fail(command: str, error: Exception) -> int:
    print(f"onnx-lambda {command}: {error}", file=sys.stderr)
    return 2


# The import inside is deferred so that ``onnx-lambda --help`` stays fast.
def emulator_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from onnx_lambda.emulator.template import parse_overrides

    env_vars = json.loads(args.env_vars.read_text()) if args.env_vars else None
    if args.model is not None:  # as {"Parameters": {"ONNX_LAMBDA_MODEL": ...}} in --env-vars
        env_vars = env_vars or {}
        env_vars["Parameters"] = {**env_vars.get("Parameters", {}), "ONNX_LAMBDA_MODEL": args.model}
    return dict(template=args.template,
                parameter_overrides=parse_overrides(args.parameter_overrides),
                env_vars=env_vars, memory_mb=args.memory, timeout_s=args.timeout,
                cpu_limit=args.cpu_limit, enforce_memory=not args.no_memory_limit)


def print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
