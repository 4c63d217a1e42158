"""``onnx-lambda warm``: run the warmer's logic from here, against AWS or the local emulator.

    onnx-lambda warm FUNCTION_NAME -n 4          # a deployed function (stack output), alias live
    onnx-lambda warm InferenceFunction -n 4 --endpoint-url http://127.0.0.1:3000   # local serve

Prints the warmer's report (JSON); exits 1 unless every ping answered from a distinct
environment.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "warm", help="warm N environments of a function (the warmer's logic, run from here)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("function", help="function name or ARN (locally: the logical ID)")
    parser.add_argument("-n", "--concurrency", type=int, default=1,
                        help="environments to warm (default 1)")
    parser.add_argument("--qualifier", default="live",
                        help="alias or version (default live; '' = unqualified)")
    parser.add_argument("--hold-ms", type=int, default=100,
                        help="how long each ping holds its environment (default 100)")
    parser.add_argument("--endpoint-url",
                        help="Lambda API endpoint, e.g. the local emulator's http://127.0.0.1:3000")
    parser.add_argument("--region", help="AWS region (default: from the AWS configuration)")
    parser.set_defaults(func=run)


def client_for(endpoint_url: str | None, region: str | None, concurrency: int) -> Any:
    """A Lambda client like the warmer's; a local endpoint gets placeholder credentials."""
    import boto3  # deferred (with the warmer's modules) so `onnx-lambda --help` stays instant

    from warmer.fanout import client_config

    extra = LOCAL_CREDENTIALS if endpoint_url else {}
    return boto3.client("lambda", endpoint_url=endpoint_url,
                        region_name=region or ("us-east-1" if endpoint_url else None),
                        config=client_config(concurrency), **extra)


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError

    from warmer.fanout import warm
    from warmer.settings import WarmConfig

    try:
        config = WarmConfig(target=args.function, qualifier=args.qualifier,
                            concurrency=args.concurrency, hold_ms=args.hold_ms)
        client = client_for(args.endpoint_url, args.region, args.concurrency)
    except (ValueError, BotoCoreError) as error:  # bad flags; no region configured
        print(f"onnx-lambda warm: {error}", file=sys.stderr)
        return 2
    report = warm(config, client)
    print(json.dumps(report, indent=2))
    return 0 if report["environments"] == report["asked"] and not report["failed"] else 1
