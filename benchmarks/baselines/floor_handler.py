"""BASELINE — the floor as a Lambda handler: what any numpy + onnxruntime-binding handler pays.

``import numpy, onnxruntime`` and one ``InferenceSession`` (the portable model, default options)
at module scope, nothing else; each request is run and answered as plain JSON. Served through
the emulator it gives the first response every handler on the binding is bounded by (the
handler before the C-API runtime measured 1.08–1.14× this floor in process), so ours against it
is the issue's "first response vs today's" at its most conservative.
"""

from __future__ import annotations

import json
import os

import numpy  # noqa: F401  (timed: the import is part of the floor)
import onnxruntime

from benchmarks.baselines import io

session = onnxruntime.InferenceSession(os.environ["MODEL_PATH"],
                                       providers=["CPUExecutionProvider"])


def handler(event: dict, context: object) -> dict:
    body = json.loads(event.get("body") or "{}")
    values = session.run(None, io.feeds(session, body["inputs"]))
    return {"statusCode": 200, "headers": {"content-type": "application/json"},
            "body": json.dumps({"outputs": io.outputs(session, values)})}
