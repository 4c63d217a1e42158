"""``regions``' pure parts: the region list against the installed botocore's endpoint data, the
``--endpoint`` / ``--network-ms`` parsing, and the report's ranking and budget sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnx_lambda.regions import endpoints, report


def test_the_commercial_regions_are_botocores_lambda_endpoints() -> None:
    import botocore

    data = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    (aws,) = [p for p in data["partitions"] if p["partition"] == "aws"]
    lambda_regions = {k for k in aws["services"]["lambda"]["endpoints"] if "fips" not in k}
    assert set(endpoints.COMMERCIAL) == lambda_regions
    assert aws["defaults"]["hostname"] == "{service}.{region}.{dnsSuffix}"
    assert endpoints.public_lambda("eu-west-1") == endpoints.Target(
        "lambda.eu-west-1.amazonaws.com", 443, "lambda.eu-west-1.amazonaws.com")


def test_named_regions_and_endpoints() -> None:
    assert endpoints.choose(["eu-west-1,us-east-1", "eu-west-1"]) == ["eu-west-1", "us-east-1"]
    assert endpoints.choose(None) == list(endpoints.COMMERCIAL)
    assert endpoints.parse_endpoints(["eu-west-1=https://a.example/", "us-east-1=http://b:8080"]
                                     ) == {"eu-west-1": "https://a.example/",
                                           "us-east-1": "http://b:8080"}
    assert endpoints.from_url("http://b:8080") == endpoints.Target("b", 8080, "b")
    for bad in ("eu-west-1", "=https://a", "eu-west-1=ftp://a"):
        with pytest.raises(ValueError):
            endpoints.parse_endpoints([bad])


def result(region: str, ms: float | None) -> dict[str, object]:
    return {"region": region, "reachable": ms is not None, "network_ms": ms,
            "new_connection_ms": None if ms is None else 3 * ms,
            "errors": [] if ms is not None else ["timed out"], "phases": {}}


def test_ranking_budget_sentence_and_network_option(tmp_path: Path) -> None:
    doc = report.document([result("b", 30.0), result("dead", None), result("a", 19.2)],
                          mode="lambda-endpoint", budget_ms=100.0, samples=3)
    assert [r["region"] for r in doc["regions"]] == ["a", "b", "dead"]
    assert report.sentence(doc["regions"][0], 100.0).startswith(
        "a: 19 ms, leaves 81 ms of a 100 ms budget")
    assert "over a 10 ms budget" in report.sentence(doc["regions"][1], 10.0)
    assert report.sentence(doc["regions"][2], 100.0) == "dead: unreachable (timed out)"
    path = tmp_path / "regions.json"
    path.write_text(json.dumps(doc))
    assert report.network_option(str(path)) == {"a": 19.2, "b": 30.0}
    assert report.network_option("25") == {"given": 25.0}
    for bad in ("-1", "nan", str(tmp_path / "missing.json")):
        with pytest.raises(report.RegionsFileError):
            report.network_option(bad)
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(report.RegionsFileError, match="not written by"):
        report.network_option(str(path))
