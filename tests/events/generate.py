"""Regenerate the event fixtures in this folder with ``sam local generate-event``.

Run: ``.venv/bin/python tests/events/generate.py``. The shapes come from SAM CLI's generators
(real API Gateway / ALB / EventBridge payloads); only path, method and body are ours. SAM CLI
has no Function URL generator: that fixture is the HTTP API event moved to a ``lambda-url``
domain with the fields Function URLs leave out removed (per the Lambda Function URL docs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
BODY = json.dumps({"inputs": [[1.0, 2.0, 3.0, 4.0]]})

EVENTS = {
    "http-api-predict.json": ["apigateway", "http-api-proxy", "--path", "predict",
                              "--method", "POST", "--body", BODY],
    "http-api-health.json": ["apigateway", "http-api-proxy", "--path", "health",
                             "--method", "GET", "--body", ""],
    "rest-api-predict.json": ["apigateway", "aws-proxy", "--path", "predict",
                              "--method", "POST", "--body", BODY],
    "alb-predict.json": ["alb", "request", "--path", "predict", "--method", "POST",
                         "--body", BODY],
    "scheduled.json": ["cloudwatch", "scheduled-event"],
}


def sam_event(args: list[str]) -> dict:
    sam = Path(sys.executable).with_name("sam")
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    out = subprocess.run([str(sam), "local", "generate-event", *args], check=True,
                         capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def function_url(http_api: dict) -> dict:
    event = json.loads(json.dumps(http_api))
    context = event["requestContext"]
    context["domainName"] = "abcdefghij.lambda-url.us-east-1.on.aws"
    context["domainPrefix"] = "abcdefghij"
    context["apiId"] = "abcdefghij"
    context.pop("authentication", None)
    context["authorizer"] = None
    for key in ("pathParameters", "stageVariables"):
        event.pop(key, None)
    return {k: v for k, v in event.items() if v is not None}


def generate() -> dict[str, dict]:
    events = {name: sam_event(args) for name, args in EVENTS.items()}
    events["function-url-predict.json"] = function_url(events["http-api-predict.json"])
    return events


if __name__ == "__main__":
    for name, event in generate().items():
        (HERE / name).write_text(json.dumps(event, indent=2) + "\n")
        print("wrote", HERE / name)
