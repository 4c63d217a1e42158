"""Warm latency over HTTP: a closed-loop load generator on aiohttp with keep-alive connections
(one persistent connection per concurrent client, like a real client's pool), so connection
setup is never part of a sample.

``measure`` runs the targets interleaved (A B A B … in rounds of ``batch`` requests) so machine
drift hits every target alike, and returns client-observed latencies in milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp

WARMUP_REQUESTS = 20


async def _client(session: aiohttp.ClientSession, url: str, body: bytes, count: int,
                  out: list[float]) -> None:
    headers = {"content-type": "application/json"}
    for _ in range(count):
        started = time.perf_counter()
        async with session.post(url, data=body, headers=headers) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"{url}: HTTP {response.status}: {await response.text()}")
        out.append((time.perf_counter() - started) * 1e3)


async def _batch(url: str, body: bytes, concurrency: int, requests: int,
                 warmup: int) -> list[float]:
    import aiohttp  # developer tooling only; heavy, so imported where used

    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    samples: list[float] = []
    async with aiohttp.ClientSession(connector=connector) as session:
        # every client opens its connection (and warms the path) before it is measured
        await asyncio.gather(*(_client(session, url, body, max(1, warmup // concurrency), [])
                               for _ in range(concurrency)))
        per_client = max(1, requests // concurrency)
        await asyncio.gather(*(_client(session, url, body, per_client, samples)
                               for _ in range(concurrency)))
    return samples


def measure(urls: Mapping[str, str], body: bytes, *, concurrency: int, requests: int,
            rounds: int, on_round: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """``requests`` per target in total, split over ``rounds`` interleaved batches."""
    results: dict[str, list[float]] = {name: [] for name in urls}
    per_round = max(concurrency, requests // max(rounds, 1))
    for i in range(rounds):
        for name, url in urls.items():
            warmup = WARMUP_REQUESTS if i == 0 else concurrency
            results[name] += asyncio.run(_batch(url, body, concurrency, per_round, warmup))
        if on_round:
            on_round()
    return results
