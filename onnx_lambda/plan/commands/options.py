"""What the benchmark commands share: the report folders, the default models, ``--quick``
filling, integer lists, and the exact command line a report prints."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from onnx_lambda.source_tree import root

DOCS = Path("docs")
IMG = DOCS / "benchmarks"


def default_models() -> list[Path]:
    """models/digits and models/minilm when built, else a tiny generated model (relative to
    the repository when run from it, so reports show the command as a user types it)."""
    base = Path("models") if Path.cwd().resolve() == root() else root() / "models"
    built = [base / n for n in ("digits", "minilm") if (base / n / "model.json").exists()]
    if built:
        return built
    from onnx_lambda.plan.subject import default_model

    return [default_model()]


def fill(args: argparse.Namespace, full: dict[str, object], quick: dict[str, object]) -> None:
    """Options not given take their ``--quick`` or full value (explicit flags always win)."""
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)


def ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def command_line(args: argparse.Namespace, program: str | None = None) -> str:
    """The exact command, every option spelled out (so a report says how to reproduce it):
    ``onnx-lambda COMMAND …``, or ``program …`` (a command of its own, the lab's)."""
    words = program.split() if program else ["onnx-lambda", args.command]
    for key, value in vars(args).items():
        if key in ("command", "func") or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
            words += [flag, ",".join(str(v) for v in value)]
        elif isinstance(value, list | tuple):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return " ".join(shlex.quote(w) for w in words)
