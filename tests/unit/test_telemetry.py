"""The per-request line must be valid CloudWatch EMF (the spec's required members) and the
Server-Timing header must parse as the W3C grammar expects."""

from __future__ import annotations

import io
import json
import re

import pytest

from handler import metric_names
from handler import telemetry as telemetry_module
from handler.telemetry import StageTimer, Telemetry, server_timing


def emit(cold: bool, metrics: bool = True) -> dict:
    stream = io.StringIO()
    telemetry = Telemetry(namespace="NS", function_name="fn", metrics=metrics, level="info",
                          stream=stream)
    durations = {"decode": 0.01, "inference": 0.2, "encode": 0.02, "total": 0.3,
                 "model-load": 12.0, "init": 80.0, "imports": 50.0}
    telemetry.request(durations, request_id="r", cold=cold, source="http-api", method="POST",
                      path="/predict", status=200)
    (line,) = stream.getvalue().splitlines()
    return json.loads(line)


def test_emf_document_matches_the_specification() -> None:
    record = emit(cold=True)
    aws = record["_aws"]
    assert isinstance(aws["Timestamp"], int)
    (directive,) = aws["CloudWatchMetrics"]
    assert directive["Namespace"] == "NS"
    for dimension_set in directive["Dimensions"]:
        for dimension in dimension_set:
            assert isinstance(record[dimension], str)
    names = {m["Name"] for m in directive["Metrics"]}
    assert names == {"Decode", "Inference", "Encode", "Latency", "ModelLoad", "InitDuration",
                     "ColdStart"}
    for metric in directive["Metrics"]:
        assert isinstance(record[metric["Name"]], int | float)
        assert metric["Unit"] in ("Milliseconds", "Count")
    assert record["ColdStart"] == 1 and record["requestId"] == "r"


def test_every_emitted_metric_is_a_declared_name() -> None:
    """The dashboard's test reads handler/metric_names.py: what the line carries must be it."""
    cold = {m["Name"] for m in emit(cold=True)["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    stream = io.StringIO()
    telemetry = Telemetry(namespace="NS", function_name="fn", metrics=True, level="info",
                          stream=stream)
    telemetry.request({"queue": 1.0, "decode": 0.1, "total": 2.0}, request_id="r", cold=False,
                      source="http-api", method="POST", path="/predict", status=200)
    # a generation's (handler.api.openai.chat): time to the first token, the whole run, its pace
    telemetry.request({"decode": 0.1, "ttft": 5.0, "generate": 50.0, "tokens-per-s": 40.0,
                       "total": 51.0}, request_id="r", cold=False, source="http-api",
                      method="POST", path="/v1/chat/completions", status=200)
    warm = {m["Name"] for line in stream.getvalue().splitlines()
            for m in json.loads(line)["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert cold | warm == metric_names.HANDLER


def test_a_rate_is_a_count_per_second_metric_and_a_server_timing_description() -> None:
    stream = io.StringIO()
    timing = Telemetry(namespace="NS", function_name="fn", metrics=True, level="info",
                       stream=stream).request({"ttft": 5.0, "tokens-per-s": 40.5, "total": 9.0},
                                              request_id="r", cold=False, source="http-api",
                                              method="POST", path="/v1/completions", status=200)
    assert timing == "ttft;dur=5.000, tokens-per-s;desc=40.500, total;dur=9.000"
    record = json.loads(stream.getvalue())
    units = {m["Name"]: m["Unit"] for m in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert units == {"TimeToFirstToken": "Milliseconds", "TokensPerSecond": "Count/Second",
                     "Latency": "Milliseconds", "ColdStart": "Count"}
    assert record["TokensPerSecond"] == 40.5


@pytest.mark.parametrize("metrics", [True, False])
def test_figures_outside_a_request_line(metrics: bool) -> None:
    stream = io.StringIO()
    Telemetry(namespace="NS", function_name="fn", metrics=metrics, level="info",
              stream=stream).figures("stream finished", {"generate": 12.3456,
                                                         "tokens-per-s": 80.0}, id="x")
    record = json.loads(stream.getvalue())
    assert (record["Generation"], record["TokensPerSecond"], record["id"]) == (12.346, 80.0, "x")
    assert ("_aws" in record) is metrics
    if metrics:
        directive = record["_aws"]["CloudWatchMetrics"][0]
        assert {m["Name"]: m["Unit"] for m in directive["Metrics"]} == {
            "Generation": "Milliseconds", "TokensPerSecond": "Count/Second"}
        assert record["FunctionName"] == "fn" and directive["Namespace"] == "NS"


def test_warm_request_has_no_init_metrics() -> None:
    record = emit(cold=False)
    names = {m["Name"] for m in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert "InitDuration" not in names and record["ColdStart"] == 0


def test_metrics_off_still_logs_the_request() -> None:
    record = emit(cold=False, metrics=False)
    assert "_aws" not in record and record["message"] == "request"


def test_server_timing_grammar() -> None:
    header = server_timing({"decode": 0.0123, "inference": 1.5}, cold=True)
    entry = re.compile(r'[a-z-]+(;dur=\d+\.\d+)?(;desc="[^"]*")?')
    assert all(entry.fullmatch(part) for part in header.split(", "))
    assert header.startswith("decode;dur=0.012, inference;dur=1.500")


def test_stage_timer_durations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each stage since the mark before it, in mark order after what the dict held (the
    queue), and the total from the start to the last mark."""
    clock = iter([1.0, 1.5, 1.75, 3.0])
    monkeypatch.setattr(telemetry_module, "now", lambda: next(clock))
    timer = StageTimer()
    timer.durations["queue"] = 9.0
    timer.mark("a")
    timer.mark("b")
    durations = timer.close("encode")
    assert list(durations) == ["queue", "a", "b", "encode", "total"]
    assert durations == {"queue": 9.0, "a": 500.0, "b": 250.0, "encode": 1250.0,
                         "total": 2000.0}


def test_line_is_valid_json_with_nothing_to_report() -> None:
    for metrics in (True, False):
        stream = io.StringIO()
        Telemetry(namespace="N", function_name='quo"te', metrics=metrics, level="info",
                  stream=stream).request({}, request_id="r", cold=False, source="direct",
                                         method=None, path=None, status=400,
                                         error_type="BadRequest")
        record = json.loads(stream.getvalue())
        assert record["requestId"] == "r" and record["functionName"] == 'quo"te'
        assert record["path"] is None and record["errorType"] == "BadRequest"


def test_names_and_values_with_percent_signs_and_quotes_stay_valid_json() -> None:
    stream = io.StringIO()
    telemetry = Telemetry(namespace="N%s", function_name='f%d"n', metrics=True, level="info",
                          stream=stream)
    for cold in (True, False, False):  # the second warm line reuses the rendered template
        telemetry.request({"decode": 0.5, "cache": 1.0, "total": 2.0}, request_id='r"%d',
                          cold=cold, source="http-api", method="GET", path='/p"%s',
                          status=404)
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [r["coldStart"] for r in records] == [True, False, False]
    for record in records:
        assert record["functionName"] == record["FunctionName"] == 'f%d"n'
        assert record["requestId"] == 'r"%d' and record["path"] == '/p"%s'
        assert record["status"] == 404 and record["errorType"] is None
        assert record["Decode"] == 0.5 and record["Latency"] == 2.0 and "cache" not in record
        assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "N%s"


def test_request_returns_the_server_timing_of_its_durations() -> None:
    """The service takes the header from the log call (one template lookup for both)."""
    durations = {"queue": 0.5, "decode": 0.0123, "inference": 1.5, "total": 2.25}
    for metrics, level in ((True, "info"), (False, "info"), (False, "warning")):
        stream = io.StringIO()
        telemetry = Telemetry(namespace="N", function_name="fn", metrics=metrics, level=level,
                              stream=stream)
        for cold in (True, False, False):
            assert telemetry.request(durations, request_id="r", cold=cold, source="direct",
                                     method=None, path=None, status=200) == server_timing(
                durations, cold)
        assert bool(stream.getvalue()) is (level == "info")


def test_emf_values_are_the_header_numbers() -> None:
    """Each duration is formatted once (milliseconds, 3 decimals) for both: the EMF value and
    the Server-Timing entry carry the same number."""
    stream = io.StringIO()
    telemetry = Telemetry(namespace="N", function_name="fn", metrics=True, level="info",
                          stream=stream)
    durations = {"queue": 2.00049, "decode": 0.01234, "cache": 0.5, "inference": 1.23456,
                 "total": 3.75}
    header = telemetry.request(durations, request_id="r", cold=False, source="http-api",
                               method="POST", path="/predict", status=200)
    record = json.loads(stream.getvalue())
    assert header == ("queue;dur=2.000, decode;dur=0.012, cache;dur=0.500, "
                      "inference;dur=1.235, total;dur=3.750")
    assert [record[m] for m in ("QueueTime", "Decode", "Inference", "Latency")] == [
        2.0, 0.012, 1.235, 3.75]
