"""``onnx-lambda serve`` and ``onnx-lambda invoke`` (the local emulator's commands)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onnx_lambda.emulator.pool import InvokeResult


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--template", "-t", default="template.yaml",
                        help="SAM template (default: template.yaml)")
    parser.add_argument("--parameter-overrides", default=None, metavar="'K=V K2=V2'",
                        help="template parameter values, SAM syntax")
    parser.add_argument("--env-vars", "-n", type=Path, default=None, metavar="FILE.json",
                        help='environment overrides, SAM format: {"Parameters": {...}, '
                             '"FunctionName": {...}}')
    parser.add_argument("--memory", type=int, default=None, metavar="MB",
                        help="override every function's MemorySize")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="override every function's Timeout")
    parser.add_argument("--cpu-limit", choices=("auto", "cfs-quota", "pinned", "off"),
                        default="auto", help="how the CPU share of the memory size is enforced "
                        "(auto: cgroup CFS quota if writable, else core pinning)")
    parser.add_argument("--no-memory-limit", action="store_true",
                        help="measure memory but never kill an environment over its size")


def _fail(command: str, error: Exception) -> int:
    print(f"onnx-lambda {command}: {error}", file=sys.stderr)
    return 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve", help="run the template's functions locally (HTTP routes + Invoke API)",
        description="Docker-free local Lambda + API Gateway: the template's HTTP routes and "
                    "the Lambda Invoke API (/2015-03-31/functions/NAME/invocations) on one "
                    "port, each function in real execution environments (awslambdaric).")
    _add_common(serve)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument("--provisioned", type=int, default=None, metavar="N",
                       help="override ProvisionedConcurrentExecutions (0 = none)")
    serve.add_argument("--concurrency", type=int, default=4, metavar="N",
                       help="max environments per function unless the template reserves "
                            "concurrency (beyond it: 429 / throttled) (default: 4)")
    serve.add_argument("--idle-timeout", type=float, default=600.0, metavar="S",
                       help="reap on-demand environments idle this long (default: 600)")
    serve.add_argument("--init-timeout", type=float, default=10.0, metavar="S",
                       help="init phase limit of an environment (default: 10, as Lambda)")
    serve.add_argument("--tls", action="store_true",
                       help="HTTPS on the HTTP front and Function URLs, with a self-signed "
                            "certificate made at start (its path is in the banner)")
    serve.add_argument("--quiet", "-q", action="store_true",
                       help="don't print function logs and REPORT lines")
    serve.set_defaults(func=_serve)

    invoke = subparsers.add_parser(
        "invoke", help="invoke one function once (like sam local invoke)",
        description="Start one execution environment, send one event, print the response "
                    "(stdout) and the function's log with its REPORT line (stderr).")
    invoke.add_argument("function", help="function logical ID in the template")
    invoke.add_argument("--event", "-e", default=None, metavar="EVENT.json",
                        help="event file ('-' = stdin; default: {})")
    invoke.add_argument("--qualifier", default=None, help="$LATEST (default) or the alias")
    _add_common(invoke)
    invoke.set_defaults(func=_invoke)


# The imports inside the functions below are deferred so that ``onnx-lambda --help`` stays fast.
def _emulator_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from onnx_lambda.emulator.template import parse_overrides

    env_vars = json.loads(args.env_vars.read_text()) if args.env_vars else None
    return dict(template=args.template,
                parameter_overrides=parse_overrides(args.parameter_overrides),
                env_vars=env_vars, memory_mb=args.memory, timeout_s=args.timeout,
                cpu_limit=args.cpu_limit, enforce_memory=not args.no_memory_limit)


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from onnx_lambda.emulator.intrinsics import TemplateError
    from onnx_lambda.emulator.server import Emulator, new_event_loop, serve_until_stopped

    try:
        emulator = Emulator(host=args.host, port=args.port, provisioned=args.provisioned,
                            concurrency=args.concurrency, idle_timeout_s=args.idle_timeout,
                            init_timeout_s=args.init_timeout, tls=args.tls,
                            log=None if args.quiet else _print_err, **_emulator_kwargs(args))
    except (TemplateError, OSError, ValueError) as error:
        return _fail("serve", error)

    def ready() -> None:
        print(emulator.banner(), file=sys.stderr)
        for name, pool in emulator.pools.items():
            if pool.init_failure is not None:  # shown even with --quiet: nothing will work
                print(f"onnx-lambda serve: {name}: provisioned concurrency FAILED, init error "
                      f"{pool.init_failure}\n  every request starts an environment whose init "
                      "is retried, as on Lambda: the HTTP API answers 500 Internal Server Error, "
                      "Invoke a FunctionError (Unhandled) carrying the init error",
                      file=sys.stderr, flush=True)
        print(f"READY {emulator.url}", flush=True)

    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(serve_until_stopped(emulator, ready))
    except OSError as error:  # e.g. the port is taken
        return _fail("serve", error)
    return 0


def _invoke(args: argparse.Namespace) -> int:
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
        emulator = Emulator(port=0, provisioned=0, log=_print_err, **_emulator_kwargs(args))
    except (TemplateError, OSError, ValueError) as error:
        return _fail("invoke", error)

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
        return _fail("invoke", error)
    sys.stdout.buffer.write(result.payload + b"\n")
    return 1 if result.error_type else 0


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
