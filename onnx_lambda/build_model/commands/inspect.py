"""``onnx-lambda inspect MODEL``: a model's signature, sizes, quantizable nodes and build advice,
without running it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect", help="a model's signature, sizes, quantizable nodes and build advice",
        description="MODEL: an .onnx file or a model folder. Never runs the model.")
    parser.add_argument("model", metavar="MODEL", type=Path)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit codes: 0, 2 no such MODEL, 3 not a readable model."""
    from rich.console import Console
    from rich.markup import escape

    from onnx_lambda.build_model import inspect
    from onnx_lambda.build_model.errors import BuildError

    console = Console(stderr=True)
    if not args.model.exists():
        console.print(f"[red]error:[/red] {escape(str(args.model))}: no such file or folder")
        return 2
    try:
        summary = inspect.summarize(*inspect.load(args.model))
    except BuildError as exc:
        console.print(f"[red]error:[/red] {escape(exc.message)}", highlight=False, soft_wrap=True)
        return exc.exit_code
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        inspect.render(summary, Console())
    return 0
