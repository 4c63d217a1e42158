"""``serve --network-delay MS``: probe, seen through the real handler, finds the network leg
grown by about two one-way delays per request (printed as a figure, bounded generously: no
timing is asserted tightly), and ``regions --endpoint`` ranks a near and a far emulator with
probe's own figure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from onnx_lambda.cli import main
from onnx_lambda.client import probe
from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.support import models

pytestmark = pytest.mark.e2e
DELAY_MS = 25.0


@pytest.fixture(scope="module")
def near_and_far(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Emulator]]:
    model = models.linear(tmp_path_factory.mktemp("model") / "linear.onnx")
    env = {"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}}
    with ExitStack() as stack:
        yield {name: stack.enter_context(Emulator(root() / "template.yaml", port=0, log=None,
                                                  env_vars=env, network_delay_ms=delay)
                                         .running())
               for name, delay in (("near", 0.0), ("far", DELAY_MS))}


def network_p50(url: str) -> float:
    report = probe.run(url, requests=8, variants=["keep-alive"])
    return float(report["variants"]["keep-alive"]["stages"]["network"]["p50"])


def test_probe_sees_two_delays_per_round_trip(near_and_far: dict[str, Emulator]) -> None:
    far = near_and_far["far"]
    assert far.network_delay_ms == DELAY_MS and "network delay: 25 ms" in far.banner()
    near_ms, far_ms = (network_p50(near_and_far[n].url) for n in ("near", "far"))
    grown = far_ms - near_ms
    print(f"\nprobe network p50: near {near_ms:.2f} ms, far {far_ms:.2f} ms (one-way delay "
          f"{DELAY_MS:g} ms): grew {grown:.2f} ms = {grown / DELAY_MS:.2f} one-way delays")
    assert 1.5 * DELAY_MS < grown < 6 * DELAY_MS  # ~2 delays; generous for a loaded machine


def test_regions_ranks_deployed_endpoints_by_probes_figure(
        near_and_far: dict[str, Emulator], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["regions", "-n", "4", "--json"]
    for name in ("far", "near"):
        args += ["--endpoint", f"{name}={near_and_far[name].url}"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "deployed"
    assert [r["region"] for r in doc["regions"]] == ["near", "far"]
    assert all(r["reachable"] and r["samples"] == 4 for r in doc["regions"])
