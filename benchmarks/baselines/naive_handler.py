"""BASELINE — the naive handler, in the style of common Lambda inference samples:

- heavy imports at module top: boto3 (an S3 client "to fetch the model"), the full Powertools
  (Logger, Metrics, Tracer);
- a session with default options (all cores' worth of threads, spinning, full online graph
  optimization at every load);
- the model loaded lazily inside the first request.

``MARKS`` records what this module spends at import (for the bench's cold breakdown).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402

import boto3  # noqa: E402
import numpy as np  # noqa: E402, F401
import onnxruntime as ort  # noqa: E402
from aws_lambda_powertools import Logger, Metrics, Tracer  # noqa: E402
from aws_lambda_powertools.metrics import MetricUnit  # noqa: E402

from benchmarks.baselines import io  # noqa: E402

logger = Logger(service="naive-inference")
metrics = Metrics(namespace="Baseline", service="naive-inference")
tracer = Tracer(service="naive-inference")
s3 = boto3.client("s3", region_name=os.environ.get("AWS_REGION", "us-east-1"))
session: ort.InferenceSession | None = None
MARKS = {"imports": (time.perf_counter() - _T0) * 1e3}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict, context: object) -> dict:
    global session
    if session is None:
        started = time.perf_counter()
        session = ort.InferenceSession(os.environ["MODEL_PATH"])
        MARKS["model-load"] = (time.perf_counter() - started) * 1e3
    body = json.loads(event.get("body") or "{}")
    started = time.perf_counter()
    values = session.run(None, io.feeds(session, body["inputs"]))
    metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds,
                       value=(time.perf_counter() - started) * 1e3)
    logger.info("prediction done")
    return {"statusCode": 200, "headers": {"content-type": "application/json"},
            "body": json.dumps({"outputs": io.outputs(session, values)})}
