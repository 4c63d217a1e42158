"""Warm latency over HTTP: a closed-loop load generator on aiohttp with keep-alive connections
(one persistent connection per concurrent client, like a real client's pool), so connection
setup is never part of a sample.

``measure`` runs the targets interleaved (A B A B … in rounds of ``batch`` requests) so machine
drift hits every target alike, and returns client-observed latencies in milliseconds. Every
target gets the same headers and body, or its own body (``body`` as a mapping by target).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp

WARMUP_REQUESTS = 20
JSON = {"content-type": "application/json"}


async def _client(session: aiohttp.ClientSession, url: str, body: bytes,
                  headers: Mapping[str, str], count: int, out: list[float]) -> None:
    for _ in range(count):
        started = time.perf_counter()
        async with session.post(url, data=body, headers=headers) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"{url}: HTTP {response.status}: {await response.text()}")
        out.append((time.perf_counter() - started) * 1e3)


async def _batch(url: str, body: bytes, headers: Mapping[str, str], concurrency: int,
                 requests: int, warmup: int) -> list[float]:
    import aiohttp  # developer tooling only; heavy, so imported where used

    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    samples: list[float] = []
    async with aiohttp.ClientSession(connector=connector) as session:
        # every client opens its connection (and warms the path) before it is measured
        first = max(1, warmup // concurrency)
        await asyncio.gather(*(_client(session, url, body, headers, first, [])
                               for _ in range(concurrency)))
        per_client = max(1, requests // concurrency)
        await asyncio.gather(*(_client(session, url, body, headers, per_client, samples)
                               for _ in range(concurrency)))
    return samples


def measure(urls: Mapping[str, str], body: bytes | Mapping[str, bytes], *, concurrency: int,
            requests: int, rounds: int,
            headers: Mapping[str, str] = JSON,
            warmup: int = WARMUP_REQUESTS,
            on_round: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """``requests`` POSTs per target in total, split over ``rounds`` interleaved batches, after
    ``warmup`` unmeasured ones (then one per client at the start of each later round)."""
    results: dict[str, list[float]] = {name: [] for name in urls}
    per_round = max(concurrency, requests // max(rounds, 1))
    for i in range(rounds):
        for name, url in urls.items():
            data = body if isinstance(body, bytes) else body[name]
            results[name] += asyncio.run(_batch(url, data, headers, concurrency, per_round,
                                                warmup if i == 0 else concurrency))
        if on_round:
            on_round()
    return results
