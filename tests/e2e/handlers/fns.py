"""Tiny Lambda handlers for the emulator's end-to-end tests (one behaviour each)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

_COLD = True


def echo(event: Any, context: Any) -> Any:
    """Return the event with facts about the environment and the invocation."""
    global _COLD
    cold, _COLD = _COLD, False
    print(f"echo {context.aws_request_id}")
    return {
        "event": event,
        "cold": cold,
        "pid": os.getpid(),
        "requestId": context.aws_request_id,
        "functionName": context.function_name,
        "invokedArn": context.invoked_function_arn,
        "memory": context.memory_limit_in_mb,
        "remainingMs": context.get_remaining_time_in_millis(),
        "clientCustom": getattr(context.client_context, "custom", None),
        "initType": os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE"),
        "sysPath": sys.path,
        "noSite": sys.flags.no_site,
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("AWS_LAMBDA_", "LAMBDA_", "_HANDLER", "AWS_REGION", "EMU_"))},
    }


def value(event: Any, context: Any) -> Any:
    """Return ``value`` of the event (or of its JSON body, behind an API) as is: any JSON,
    e.g. an API Gateway proxy response."""
    import json

    data = json.loads(event["body"]) if "body" in event else event
    return data["value"]


def http(event: Any, context: Any) -> Any:
    """An HTTP handler: echoes the API Gateway event in a proxy response."""
    import json

    return {"statusCode": 200, "headers": {"content-type": "application/json"},
            "body": json.dumps(event)}


class Boom(Exception):
    pass


def fail(event: Any, context: Any) -> Any:
    print("about to fail")
    raise Boom("it broke")


def sleep(event: Any, context: Any) -> Any:
    time.sleep(float(event.get("seconds", 10)))
    return {"slept": event.get("seconds", 10), "pid": os.getpid()}


def allocate(event: Any, context: Any) -> Any:
    blob = bytearray(int(event["mb"]) * 1024 * 1024)
    for i in range(0, len(blob), 4096):
        blob[i] = 1
    return {"allocated": len(blob)}


def big(event: Any, context: Any) -> Any:
    return "x" * int(event["bytes"])
