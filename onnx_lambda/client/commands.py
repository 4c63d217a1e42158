"""``onnx-lambda probe URL``: the caller's-side latency breakdown of an endpoint."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# probe.VARIANTS' names (a test checks): the CLI starts without importing numpy and httpx
VARIANT_NAMES = ("keep-alive", "new connection", "JSON tensors", "JSON, no gzip", "HTTP/2")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = subparsers.add_parser(
        "probe", help="a caller's-side latency breakdown of an endpoint (network leg included)",
        description="Send N requests per variant (keep-alive, new connection per request, JSON "
                    "tensors with and without gzip, HTTP/2 on https) to a deployed or local "
                    "endpoint and print p50/p95/p99 of connect, write, wait, read, the network "
                    "leg and the server's Server-Timing stages, the cold starts seen and the "
                    "bytes moved.")
    probe.add_argument("url", help="the API's base URL (e.g. https://ID.execute-api.REGION."
                                   "amazonaws.com, or the emulator's)")
    probe.add_argument("--requests", "-n", type=int, default=200, help="per variant (200)")
    probe.add_argument("--concurrency", "-c", type=int, default=1)
    probe.add_argument("--batch", type=int, default=1,
                       help="size of a free (-1) first axis of the example input (1)")
    probe.add_argument("--dim", type=int, default=1,
                       help="size of the other free axes, e.g. the sequence length (1)")
    probe.add_argument("--input", type=Path, default=None, metavar="FILE.npz",
                       help="the inputs to send, one array per model input")
    probe.add_argument("--variant", action="append", default=None,
                       choices=VARIANT_NAMES,
                       help="repeatable; default: all (HTTP/2 on https URLs only)")
    probe.add_argument("--auth", default=None,
                       help="'iam' (SigV4 with your AWS credentials) or a bearer token")
    probe.add_argument("--region", default=None, help="SigV4 region (default: from the URL)")
    probe.add_argument("--cacert", default=None, metavar="PEM",
                       help="CA bundle to trust (the emulator's --tls certificate)")
    probe.add_argument("--insecure", action="store_true", help="do not verify TLS")
    probe.add_argument("--timeout", type=float, default=30.0, metavar="S")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="also write probe.json, probe.txt and probe.png there")
    probe.set_defaults(func=_probe)


def _probe(args: argparse.Namespace) -> int:
    import httpx

    from handler import json_codec
    from onnx_lambda.client import probe, probe_report
    from onnx_lambda.client.errors import ClientError

    verify: bool | str = False if args.insecure else (args.cacert or True)
    try:
        report = probe.run(
            args.url, requests=args.requests, concurrency=args.concurrency, dim=args.dim,
            batch=args.batch,
            inputs=probe.load_inputs(args.input) if args.input else None,
            variants=args.variant,
            client_options={"auth": args.auth, "region": args.region, "verify": verify,
                            "timeout": args.timeout},
            progress=lambda line: print(f"\r{line}", end="", file=sys.stderr, flush=True))
    except (ClientError, httpx.HTTPError, OSError, ValueError) as error:
        print(f"\nonnx-lambda probe: {error}{_tls_hint(error)}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    rendered = probe_report.text(report)
    # RFC 8259 at the output edge: a variant whose every request failed has NaN medians
    document = json.dumps(json_codec.dumps(report)[1], indent=2, allow_nan=False)
    print(document if args.json else rendered, end="" if not args.json else "\n")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "probe.json").write_text(document + "\n")
        (args.out / "probe.txt").write_text(rendered)
        probe_report.plot(report, args.out / "probe.png")
        print(f"wrote {args.out}/probe.json, probe.txt, probe.png", file=sys.stderr)
    return 0


def _tls_hint(error: Exception) -> str:
    """What to pass when the server's certificate is not one the system trusts (``serve --tls``
    makes a self-signed one)."""
    if "CERTIFICATE_VERIFY_FAILED" not in str(error):
        return ""
    return ("\n  the server's certificate is not trusted here: pass --cacert PEM (onnx-lambda "
            "serve --tls writes its self-signed certificate to a temporary folder and prints "
            "the path in its banner, 'TLS: self-signed certificate PATH'), or --insecure to "
            "skip verification")
