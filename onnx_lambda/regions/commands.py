"""``onnx-lambda regions``: TCP connect, TLS handshake and a credential-free HTTPS round trip to
each region's public Lambda endpoint (or ``--endpoint REGION=URL``: deployed endpoints, through
``probe``), ranked, with what the network leaves of a latency budget."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnx_lambda.regions.endpoints import Resolver


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = subparsers.add_parser(
        "regions", help="which AWS region answers this machine fastest (network time, ranked)",
        description="From this machine: a few samples per region of TCP connect, TLS handshake "
                    "and one HTTPS GET / (no credentials: none are read or sent) to the "
                    "region's public Lambda endpoint, median and spread, ranked, and what the "
                    "network leaves of a latency budget. With --endpoint, deployed endpoints "
                    "are measured by probe instead.")
    cmd.add_argument("regions", nargs="*", metavar="REGION",
                     help="regions to measure (comma or space separated; default: every "
                          "commercial region)")
    cmd.add_argument("--endpoint", action="append", default=[], metavar="REGION=URL",
                     help="repeatable: measure this deployed endpoint (its API base URL) with "
                          "probe's client instead of the region's Lambda endpoint")
    cmd.add_argument("--samples", "-n", type=int, default=5, help="per region (5)")
    cmd.add_argument("--budget", type=float, default=100.0, metavar="MS",
                     help="the end-to-end latency target to say what is left of (100)")
    cmd.add_argument("--timeout", type=float, default=3.0, metavar="S",
                     help="per connection step (3)")
    cmd.add_argument("--concurrency", "-c", type=int, default=4,
                     help="regions sampled at once (4)")
    cmd.add_argument("--host-template", default=None, metavar="TEMPLATE",
                     help="the endpoint's host name, {region} replaced "
                          "(default: lambda.{region}.amazonaws.com)")
    cmd.add_argument("--resolve", action="append", default=[], metavar="REGION=HOST:PORT",
                     help="connect to HOST:PORT for REGION, keeping the template's name for TLS "
                          "and Host (as curl --resolve); repeatable")
    cmd.add_argument("--cacert", default=None, metavar="PEM", help="CA bundle to trust")
    cmd.add_argument("--json", action="store_true", help="print the report as JSON (the file "
                                                         "tune/simulate --network-ms read)")
    cmd.set_defaults(func=_regions)


def _resolver(args: argparse.Namespace) -> Resolver:
    from onnx_lambda.regions.endpoints import HOST_TEMPLATE, Target

    template = args.host_template or HOST_TEMPLATE
    pinned: dict[str, tuple[str, int]] = {}
    for item in args.resolve:
        region, _, address = item.partition("=")
        host, _, port = address.rpartition(":")
        if not region or not host or not port.isdigit():
            raise ValueError(f"--resolve wants REGION=HOST:PORT, got {item!r}")
        pinned[region] = (host.strip("[]"), int(port))

    def resolve(region: str) -> Target:
        name = template.format(region=region)
        host, port = pinned.get(region, (name, 443))
        return Target(host, port, name)
    return resolve


def _regions(args: argparse.Namespace) -> int:
    import ssl

    from onnx_lambda.regions import deployed, endpoints, measure, report

    def progress(line: str) -> None:
        print(f"\r{line}", end="", file=sys.stderr, flush=True)

    try:
        if args.samples < 1 or args.timeout <= 0:
            raise ValueError("--samples must be ≥ 1 and --timeout > 0")
        if args.endpoint:
            from onnx_lambda import extras

            extras.require("regions --endpoint", *extras.NEEDS["probe"])  # probe's client
            named = endpoints.parse_endpoints(args.endpoint)
            results = deployed.run(named, samples=args.samples, timeout_s=args.timeout,
                                   verify=args.cacert or True, progress=progress)
            mode = "deployed"
        else:
            context = ssl.create_default_context(cafile=args.cacert)
            results = measure.run(endpoints.choose(args.regions), _resolver(args),
                                  samples=args.samples, timeout_s=args.timeout,
                                  context=context, concurrency=args.concurrency,
                                  progress=progress)
            mode = "lambda-endpoint"
    except (ValueError, OSError) as error:
        print(f"\nonnx-lambda regions: {error}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    doc = report.document(results, mode=mode, budget_ms=args.budget, samples=args.samples)
    print(json.dumps(doc, indent=2) if args.json else report.text(doc), end="")
    if args.json:
        print()
    return 0 if any(r["reachable"] for r in results) else 1
