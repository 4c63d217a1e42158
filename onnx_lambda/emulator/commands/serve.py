"""``onnx-lambda serve``: the template's HTTP routes and the Invoke API on one port, until
stopped (``READY URL`` on stdout once every provisioned environment is initialised)."""

from __future__ import annotations

import argparse
import sys

from onnx_lambda.emulator.commands.options import add_common, emulator_kwargs, fail, print_err

# --streaming-url: the template's own switch for the streaming function
STREAMING = {"Streaming": {"StreamingUrl": "enabled"}}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve", help="run the template's functions locally (HTTP routes + Invoke API)",
        description="Docker-free local Lambda + API Gateway: the template's HTTP routes and "
                    "the Lambda Invoke API (/2015-03-31/functions/NAME/invocations) on one "
                    "port, each function in real execution environments (awslambdaric).")
    add_common(serve)
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
    serve.add_argument("--network-delay", type=float, default=0.0, metavar="MS",
                       help="hold every request and every response this long on the front, "
                            "as a caller MS ms away (one way) would see; handshakes are not "
                            "delayed (default: 0)")
    serve.add_argument("--streaming-url", action="store_true",
                       help="serve StreamingFunction's response-streaming Function URL too, as "
                            "template.yaml's Settings Streaming StreamingUrl: enabled would (the "
                            "file is not changed; its URL is in the banner)")
    serve.add_argument("--quiet", "-q", action="store_true",
                       help="don't print function logs and REPORT lines")
    serve.set_defaults(func=run)


# The imports inside are deferred so that ``onnx-lambda --help`` stays fast.
def run(args: argparse.Namespace) -> int:
    import asyncio

    from onnx_lambda.emulator.intrinsics import TemplateError
    from onnx_lambda.emulator.server import Emulator, new_event_loop, serve_until_stopped
    from onnx_lambda.emulator.template import load_template

    try:
        kwargs = emulator_kwargs(args)
        if args.streaming_url:
            kwargs["template"] = load_template(kwargs["template"],
                                               kwargs.pop("parameter_overrides"), STREAMING)
        emulator = Emulator(host=args.host, port=args.port, provisioned=args.provisioned,
                            concurrency=args.concurrency, idle_timeout_s=args.idle_timeout,
                            init_timeout_s=args.init_timeout, tls=args.tls,
                            network_delay_ms=args.network_delay,
                            log=None if args.quiet else print_err, **kwargs)
    except (TemplateError, OSError, ValueError) as error:
        return fail("serve", error)

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
        return fail("serve", error)
    return 0
