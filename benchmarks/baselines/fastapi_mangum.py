"""BASELINE — FastAPI + Mangum on Lambda: an ASGI app with a pydantic request model, the model
loaded at startup, wrapped by the Mangum adapter as the Lambda handler. ``always_on`` serves the
same ``app`` with uvicorn.

``MARKS`` records what this module spends at import (for the bench's cold breakdown).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import os  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402, F401
import onnxruntime as ort  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from mangum import Mangum  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from benchmarks.baselines import io  # noqa: E402

_T_IMPORTED = time.perf_counter()
session = ort.InferenceSession(os.environ["MODEL_PATH"], providers=["CPUExecutionProvider"])
MARKS = {"imports": (_T_IMPORTED - _T0) * 1e3,
         "model-load": (time.perf_counter() - _T_IMPORTED) * 1e3}


class PredictRequest(BaseModel):
    inputs: dict[str, Any] | list[Any]


app = FastAPI(title="baseline")


@app.post("/predict")
def predict(request: PredictRequest) -> dict[str, Any]:
    # a plain ``def``: FastAPI runs blocking work like session.run in its thread pool
    values = session.run(None, io.feeds(session, request.inputs))
    return {"outputs": io.outputs(session, values)}


handler = Mangum(app, lifespan="off")
