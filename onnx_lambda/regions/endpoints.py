"""The commercial AWS regions (partition ``aws``) and where each one's public Lambda endpoint is.

The list is botocore's ``endpoints.json`` (partition ``aws``, service ``lambda``) as of
botocore 1.43; ``tests/unit/test_regions.py`` checks it against the installed botocore's file.
Written out rather than read from botocore at run time: ``regions`` needs no AWS SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

COMMERCIAL = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "ca-west-1",
    "mx-central-1", "sa-east-1",
    "eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-central-2", "eu-north-1",
    "eu-south-1", "eu-south-2", "il-central-1", "me-central-1", "me-south-1", "af-south-1",
    "ap-south-1", "ap-south-2", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2",
    "ap-northeast-3", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
    "ap-southeast-5", "ap-southeast-6", "ap-southeast-7",
)
HOST_TEMPLATE = "lambda.{region}.amazonaws.com"  # botocore's {service}.{region}.{dnsSuffix}


class Target(NamedTuple):
    """Where one region's sample connects: the address and port, and the name the TLS
    handshake (SNI, certificate check) and the ``Host`` header carry."""

    host: str
    port: int
    server_name: str


Resolver = Callable[[str], Target]


def public_lambda(region: str, template: str = HOST_TEMPLATE) -> Target:
    """The region's public Lambda endpoint, on 443."""
    host = template.format(region=region)
    return Target(host, 443, host)


def from_url(url: str) -> Target:
    """A deployed endpoint's base URL (``--endpoint REGION=URL``) as a target."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Target(parts.hostname, port, parts.hostname)


def parse_endpoints(items: list[str]) -> dict[str, str]:
    """``REGION=URL`` pairs, in order (a repeated region: the last wins)."""
    out: dict[str, str] = {}
    for item in items:
        region, sep, url = item.partition("=")
        if not sep or not region.strip() or not url.strip():
            raise ValueError(f"--endpoint wants REGION=URL, got {item!r}")
        from_url(url.strip())  # refuse a bad URL before anything is measured
        out[region.strip()] = url.strip()
    return out


def choose(named: list[str] | None) -> list[str]:
    """The regions to measure: those named (any name: a new region needs no release of this
    tool), else every commercial one."""
    if not named:
        return list(COMMERCIAL)
    regions = [r.strip() for item in named for r in item.split(",") if r.strip()]
    return list(dict.fromkeys(regions))
