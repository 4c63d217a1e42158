"""events/ (for `sam local invoke -e`): SAM-generated shapes that hit the template's routes."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EVENTS
from tests.support import cfn
from tests.support.scripts import load

SAMPLES = sorted(EVENTS.glob("*.json"))


def routes() -> list[tuple[str, re.Pattern[str]]]:
    events = cfn.load()["Resources"]["InferenceFunction"]["Properties"]["Events"].values()
    return [(e["Properties"]["Method"],
             re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", e["Properties"]["Path"]) + "$"))
            for e in events]


def body(event: dict[str, Any]) -> str:
    raw = event.get("body") or ""
    return base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw


def test_every_kind_of_sample_is_there() -> None:
    assert {p.name for p in SAMPLES} >= {"http-api-predict.json", "http-api-v2-infer.json",
                                        "http-api-health.json", "warmer-ping.json",
                                        "scheduled.json"}


@pytest.mark.parametrize("path", [p for p in SAMPLES if p.name.startswith("http-api")],
                         ids=lambda p: p.name)
def test_http_api_samples_are_payload_2_and_match_a_route(path: Path) -> None:
    event = json.loads(path.read_text())
    assert event["version"] == "2.0"
    method, raw_path = event["requestContext"]["http"]["method"], event["rawPath"]
    assert any(m == method and pattern.match(raw_path) for m, pattern in routes()), raw_path
    if method == "POST":
        inputs = json.loads(body(event))["inputs"]
        data = inputs[0]["data"] if isinstance(inputs[0], dict) else inputs[0]
        assert len(data) == 64 and all(0 <= v <= 16 for v in data)  # one 8x8 digit image


def test_warmer_samples_follow_the_ping_contract() -> None:
    ping = json.loads((EVENTS / "warmer-ping.json").read_text())
    assert ping["warmer"] is True and 0 <= ping["holdMs"] <= 1000
    scheduled = json.loads((EVENTS / "scheduled.json").read_text())
    assert (scheduled["source"], scheduled["detail-type"]) == ("aws.events", "Scheduled Event")


def test_the_drift_check_names_changed_missing_and_unmade_files() -> None:
    """events/generate.py --check (tests/e2e/test_event_fixtures.py runs it on SAM's output)."""
    generate = load(EVENTS / "generate.py")
    committed = {p.name: json.loads(p.read_text()) for p in SAMPLES}
    assert generate.stale(committed) == []
    changed = {**committed, "scheduled.json": {**committed["scheduled.json"], "id": "x"}}
    assert generate.stale(changed) == ["scheduled.json"]
    assert generate.stale({**committed, "new.json": {}}) == ["new.json"]
    unmade = dict(committed)
    del unmade["warmer-ping.json"]
    assert generate.stale(unmade) == ["warmer-ping.json"]
