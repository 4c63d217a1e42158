"""``regions --endpoint REGION=URL``: deployed endpoints, measured with ``probe`` itself (the
same client, variants and network figure: total minus the function's Server-Timing), so a
region's figure here and ``probe URL``'s network line are one measurement."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from onnx_lambda.regions.endpoints import from_url
from onnx_lambda.regions.measure import describe

VARIANTS = ["keep-alive", "new connection"]


def run(endpoints: Mapping[str, str], *, samples: int = 5, timeout_s: float = 3.0,
        verify: bool | str = True,
        progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One result per region, shaped as :func:`.measure.run`'s (phases: probe's stages, with
    p50 as the median and p95 as the spread)."""
    import httpx  # the client extra, as for probe

    from onnx_lambda.client import probe
    from onnx_lambda.client.errors import ClientError

    results = []
    for region, url in endpoints.items():
        target = from_url(url)
        base = {"region": region, "host": target.host, "port": target.port, "url": url,
                "asked": samples}
        try:
            report = probe.run(url, requests=samples, variants=VARIANTS,
                               client_options={"verify": verify, "timeout": timeout_s,
                                               "retries": 0})
        except (ClientError, httpx.HTTPError, OSError, ValueError) as error:
            results.append({**base, "reachable": False, "samples": 0,
                            "errors": [describe(error)], "status": [], "network_ms": None,
                            "new_connection_ms": None, "phases": {}})
            continue
        kept, fresh = (report["variants"][v] for v in VARIANTS)
        phases = {name: {"median": values["p50"], "p95": values["p95"]}
                  for name, values in kept["stages"].items()}
        network = kept["stages"].get("network", {}).get("p50")
        results.append({**base, "reachable": kept["ok"] > 0 and network is not None,
                        "samples": kept["ok"], "errors": kept["first_errors"],
                        "status": [200] if kept["ok"] else [], "network_ms": network,
                        # probe's network leg of a request on a new connection (handshakes in)
                        "new_connection_ms": fresh["stages"].get("network", {}).get("p50"),
                        "phases": phases})
        if progress:
            progress(f"{region}: {kept['ok']} requests")
    return results
