"""Regenerate the sample events in this folder with SAM CLI's own ``sam local generate-event``.

    .venv/bin/python events/generate.py           # rewrite the files
    .venv/bin/python events/generate.py --check   # exit 1 when a committed file differs

The one home of the project's events: ``sam local invoke -e events/NAME.json`` and
``onnx-lambda invoke -e`` use them, and so do the tests (``tests/conftest.py`` ``EVENTS``).
The shapes are SAM CLI's (real API Gateway / ALB / EventBridge payloads); only path, method and
body are ours. Two bodies: the unprefixed events carry the default model's input (``models/
digits``: the first image of scikit-learn's digits set, a "0"), the ``linear-*`` ones the tests'
tiny model's (``tests/support/models.py`` ``linear``: four features). SAM CLI has no Function URL
generator: that event is the HTTP API one moved to a ``lambda-url`` domain with the fields
Function URLs leave out removed (per the Lambda Function URL docs). ``warmer-ping.json`` is the
warm-up ping of ``docs/explanation/architecture.md``: a direct invoke, no generator.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SAM = Path(sys.executable).with_name("sam")
LINEAR = json.dumps({"inputs": [[1.0, 2.0, 3.0, 4.0]]})


def digits_bodies() -> tuple[str, str]:
    """The simple JSON and Open Inference Protocol V2 bodies of the first digits image."""
    from sklearn.datasets import load_digits  # deferred: only this generator needs it

    pixels = [float(v) for v in load_digits().data[0]]
    v2 = {"inputs": [{"name": "input", "shape": [1, len(pixels)], "datatype": "FP32",
                      "data": pixels}]}
    return json.dumps({"inputs": [pixels]}), json.dumps(v2)


def sam_event(*args: str) -> dict[str, Any]:
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    out = subprocess.run([str(SAM), "local", "generate-event", *args], check=True,
                         capture_output=True, text=True, env=env, timeout=120).stdout
    return json.loads(out)


def http_api(method: str, path: str, body: str) -> dict[str, Any]:
    return sam_event("apigateway", "http-api-proxy", "--method", method, "--path", path,
                     "--body", body)


def function_url(http_api_event: dict[str, Any]) -> dict[str, Any]:
    event = copy.deepcopy(http_api_event)
    context = event["requestContext"]
    context["domainName"] = "abcdefghij.lambda-url.us-east-1.on.aws"
    context["domainPrefix"] = "abcdefghij"
    context["apiId"] = "abcdefghij"
    context.pop("authentication", None)
    context["authorizer"] = None
    for key in ("pathParameters", "stageVariables"):
        event.pop(key, None)
    return {k: v for k, v in event.items() if v is not None}


def generate() -> dict[str, dict[str, Any]]:
    """Every event of this folder, by file name."""
    simple, v2 = digits_bodies()
    linear_http = http_api("POST", "predict", LINEAR)
    return {
        "http-api-predict.json": http_api("POST", "predict", simple),
        "http-api-v2-infer.json": http_api("POST", "v2/models/digits/infer", v2),
        "http-api-health.json": http_api("GET", "health", ""),
        "scheduled.json": sam_event("cloudwatch", "scheduled-event"),
        "warmer-ping.json": {"warmer": True, "holdMs": 100},
        "linear-http-api-predict.json": linear_http,
        "linear-rest-api-predict.json": sam_event(
            "apigateway", "aws-proxy", "--method", "POST", "--path", "predict", "--body", LINEAR),
        "linear-alb-predict.json": sam_event(
            "alb", "request", "--method", "POST", "--path", "predict", "--body", LINEAR),
        "linear-function-url-predict.json": function_url(linear_http),
    }


def stale(events: dict[str, dict[str, Any]]) -> list[str]:
    """The names whose committed file is missing or differs, and files no generator makes."""
    committed = {p.name for p in HERE.glob("*.json")}
    differ = [name for name, event in events.items()
              if name not in committed or json.loads((HERE / name).read_text()) != event]
    return sorted([*differ, *(committed - set(events))])


def main(argv: list[str]) -> int:
    events = generate()
    if argv == ["--check"]:
        names = stale(events)
        for name in names:
            print(f"events/{name}: not what the generator makes", file=sys.stderr)
        return 1 if names else 0
    for name, event in events.items():
        (HERE / name).write_text(json.dumps(event, indent=2) + "\n")
        print("wrote", HERE / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
