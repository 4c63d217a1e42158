"""events/ (for `sam local invoke -e`): SAM-generated shapes that hit the template's routes."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import cfn

EVENTS = sorted((cfn.ROOT / "events").glob("*.json"))


def routes() -> list[tuple[str, re.Pattern[str]]]:
    events = cfn.load()["Resources"]["InferenceFunction"]["Properties"]["Events"].values()
    return [(e["Properties"]["Method"],
             re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", e["Properties"]["Path"]) + "$"))
            for e in events]


def body(event: dict[str, Any]) -> str:
    raw = event.get("body") or ""
    return base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw


def test_every_kind_of_sample_is_there() -> None:
    assert {p.name for p in EVENTS} >= {"http-api-predict.json", "http-api-v2-infer.json",
                                        "http-api-health.json", "warmer-ping.json",
                                        "scheduled.json"}


@pytest.mark.parametrize("path", [p for p in EVENTS if p.name.startswith("http-api")],
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
    ping = json.loads((cfn.ROOT / "events" / "warmer-ping.json").read_text())
    assert ping["warmer"] is True and 0 <= ping["holdMs"] <= 1000
    scheduled = json.loads((cfn.ROOT / "events" / "scheduled.json").read_text())
    assert (scheduled["source"], scheduled["detail-type"]) == ("aws.events", "Scheduled Event")
