"""``onnx-lambda invoke FUNCTION -e EVENT.json``: one environment, one event, the response on
stdout and the function's log with its REPORT line on stderr."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from onnx_lambda.emulator.commands.options import add_common, emulator_kwargs, fail, print_err

if TYPE_CHECKING:
    from onnx_lambda.emulator.pool import InvokeResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    invoke = subparsers.add_parser(
        "invoke", help="invoke one function once (like sam local invoke)",
        description="Start one execution environment, send one event, print the response "
                    "(stdout) and the function's log with its REPORT line (stderr).")
    invoke.add_argument("function", help="function logical ID in the template")
    invoke.add_argument("--event", "-e", default=None, metavar="EVENT.json",
                        help="event file ('-' = stdin; default: {})")
    invoke.add_argument("--qualifier", default=None, help="$LATEST (default) or the alias")
    add_common(invoke)
    invoke.set_defaults(func=run)


# The imports inside are deferred so that ``onnx-lambda --help`` stays fast.
def run(args: argparse.Namespace) -> int:
    import asyncio

    from onnx_lambda.emulator.intrinsics import TemplateError
    from onnx_lambda.emulator.invoke_api import ServiceError
    from onnx_lambda.emulator.server import Emulator, new_event_loop

    if args.event == "-":
        payload = sys.stdin.buffer.read()
    elif args.event:
        payload = Path(args.event).read_bytes()
    else:
        payload = b"{}"
    try:
        emulator = Emulator(port=0, provisioned=0, log=print_err, **emulator_kwargs(args))
    except (TemplateError, OSError, ValueError) as error:
        return fail("invoke", error)

    async def once() -> InvokeResult:
        await emulator.start()
        try:
            return await emulator.invoke(args.function, payload, args.qualifier)
        finally:
            await emulator.stop()

    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            result = runner.run(once())
    except ServiceError as error:
        return fail("invoke", error)
    sys.stdout.buffer.write(result.payload + b"\n")
    return 1 if result.error_type else 0
