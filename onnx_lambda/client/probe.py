"""``onnx-lambda probe URL``: where a request's milliseconds go, seen from the caller.

N requests per variant at concurrency C, the variants interleaved in blocks so drift hits them
alike: keep-alive (the baseline: binary tensors, HTTP/1.1, one pooled connection), a new
connection per request, JSON tensors (gzip accepted, as httpx does by default), the same without
gzip, and HTTP/2 (https only; reported with the protocol the server actually chose). The input
is the model's signature from ``GET /v2/models/{name}`` (a free first axis set by ``--batch``,
other free axes by ``--dim``), or ``--input FILE.npz``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from onnx_lambda.client.client import Client
from onnx_lambda.client.errors import ClientError
from onnx_lambda.client.timing import Timing
from onnx_lambda.client.wire import DATATYPES
from onnx_lambda.stats import median, percentile, ratio

BASELINE = "keep-alive"
CALLER = ("total", "connect", "write", "wait", "read", "network", "overhead")
SERVER = ("queue", "decode", "inference", "encode", "total")
PERCENTILES = (50.0, 95.0, 99.0)


class Variant(NamedTuple):
    keepalive: bool
    http2: bool
    binary: bool
    gzip: bool = True  # accept gzip answers (the handler compresses JSON of 1,400 bytes or more)


VARIANTS = {BASELINE: Variant(True, False, True), "new connection": Variant(False, False, True),
            "JSON tensors": Variant(True, False, False),
            "JSON, no gzip": Variant(True, False, False, gzip=False),
            "HTTP/2": Variant(True, True, True)}


def example_inputs(metadata: Mapping[str, Any], dim: int,
                   batch: int = 1) -> dict[str, np.ndarray]:
    """Ones of each input's V2 shape, ``batch`` for a free first axis and ``dim`` for the other
    free (-1) axes: ones are a valid token id, mask and feature for the models here; give
    ``--input`` for anything pickier."""
    arrays = {}
    for spec in metadata["inputs"]:
        if spec["datatype"] not in DATATYPES:
            raise ValueError(f"input {spec['name']!r} is {spec['datatype']}: give --input FILE.npz")
        shape = [(batch if axis == 0 else dim) if d < 0 else d
                 for axis, d in enumerate(spec["shape"])]
        arrays[spec["name"]] = np.ones(shape, dtype=DATATYPES[spec["datatype"]])
    return arrays


def run(url: str, *, requests: int = 200, concurrency: int = 1, dim: int = 1, batch: int = 1,
        inputs: Mapping[str, np.ndarray] | None = None, variants: list[str] | None = None,
        block: int = 20, client_options: Mapping[str, Any] | None = None,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Probe ``url`` and return the report (see :mod:`.probe_report` for its rendering)."""
    options = dict(client_options or {})
    names = variants or [n for n in VARIANTS if n != "HTTP/2" or url.startswith("https:")]

    def client(name: str, model: str | None = None) -> Client:
        variant = VARIANTS[name]
        return Client(url, keepalive=variant.keepalive, http2=variant.http2, model=model,
                      gzip=variant.gzip, **options)

    clients = {names[0]: client(names[0])}
    try:
        metadata = clients[names[0]].metadata()
        feeds = dict(inputs) if inputs is not None else example_inputs(metadata, dim, batch)
        clients.update({name: client(name, metadata["name"]) for name in names[1:]})
        samples: dict[str, list[Timing]] = {name: [] for name in names}
        errors: dict[str, list[str]] = {name: [] for name in names}
        with ThreadPoolExecutor(max(1, concurrency)) as pool:
            while any(len(samples[n]) + len(errors[n]) < requests for n in names):
                for name in names:
                    left = requests - len(samples[name]) - len(errors[name])
                    binary = VARIANTS[name].binary
                    calls = [lambda c=clients[name], b=binary: _call(c, feeds, b)
                             for _ in range(min(block, left))]
                    for timing, error in pool.map(lambda f: f(), calls):
                        (errors[name].append(error) if error else samples[name].append(timing))
                if progress:
                    progress(" ".join(f"{n}: {len(samples[n])}" for n in names))
    finally:
        for client in clients.values():
            client.close()
    return _report(url, metadata, feeds, requests, concurrency, samples, errors)


def _call(client: Client, feeds: Mapping[str, np.ndarray],
          binary: bool) -> tuple[Timing | None, str | None]:
    try:
        return client.infer(feeds, binary=binary).timing, None
    except ClientError as error:
        return None, str(error)


def _report(url: str, metadata: Mapping[str, Any], feeds: Mapping[str, np.ndarray],
            requests: int, concurrency: int, samples: Mapping[str, list[Timing]],
            errors: Mapping[str, list[str]]) -> dict[str, Any]:
    variants = {name: _variant(timings, errors[name]) for name, timings in samples.items()}
    return {"url": url, "model": metadata.get("name"), "requests": requests,
            "concurrency": concurrency,
            "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in
                       feeds.items()},
            "variants": variants,
            "comparisons": {k: None if isinstance(v, float) and math.isnan(v) else v
                            for k, v in _comparisons(variants).items()}}  # strict JSON


def _variant(timings: list[Timing], errors: list[str]) -> dict[str, Any]:
    warm = [t for t in timings if not t.cold]
    stages: dict[str, list[float]] = {name: [getattr(t, name) for t in warm] for name in CALLER}
    stages["network"] = [t.network for t in warm if t.network is not None]
    for name in SERVER:
        stages[f"server {name}"] = [t.server[name] for t in warm if name in t.server]
    cold = [{**t.server, "client total": t.total} for t in timings if t.cold]
    return {
        "protocol": sorted({t.protocol for t in timings}),
        "ok": len(timings), "errors": len(errors), "first_errors": errors[:3],
        "cold_starts": cold, "new_connections": sum(t.new_connection for t in timings),
        "retried": sum(t.attempts > 1 for t in timings),
        "sent_bytes": median([t.sent_bytes for t in timings]),
        "received_bytes": median([t.received_bytes for t in timings]),
        "stages": {name: {f"p{q:g}": percentile(v, q) for q in PERCENTILES}
                   for name, v in stages.items() if v},
    }




def _comparisons(variants: Mapping[str, Any]) -> dict[str, Any]:
    def p50(name: str) -> float:
        return float(variants[name]["stages"].get("total", {}).get("p50", float("nan")))

    base = variants.get(BASELINE)
    out: dict[str, Any] = {}
    if base is None:
        return out
    if "new connection" in variants:
        out["new connection / keep-alive, total p50"] = ratio(p50("new connection"),
                                                              p50(BASELINE))
    if "JSON tensors" in variants:
        out["JSON / binary tensors, total p50"] = ratio(p50("JSON tensors"), p50(BASELINE))
        for key in ("sent_bytes", "received_bytes"):
            out[f"JSON / binary tensors, {key.replace('_', ' ')}"] = ratio(
                variants["JSON tensors"][key], base[key])
    if "HTTP/2" in variants:
        spoken = variants["HTTP/2"]["protocol"]
        out["HTTP/2 / HTTP/1.1, total p50"] = (
            ratio(p50("HTTP/2"), p50(BASELINE)) if "HTTP/2" in spoken
            else f"not spoken by the server (ALPN chose {', '.join(spoken)})")
    return out


def load_inputs(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}
