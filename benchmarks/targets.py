"""The targets every lab benchmark names: ours, the floors and the baselines, and the handler
module each Lambda-style one runs as."""

from __future__ import annotations

OURS = "onnx-lambda"
# Lambda-style targets: the handler module each one runs as (all through the same emulator)
LAMBDA_TARGETS = {
    OURS: "handler.app",
    "naive handler": "benchmarks.baselines.naive_handler",
    "FastAPI + Mangum": "benchmarks.baselines.fastapi_mangum",
}
FLOOR = "floor"
# the floor as a Lambda handler: served through the emulator beside the Lambda-style targets
FLOOR_HANDLER = "benchmarks.baselines.floor_handler"
CAPI_FLOOR = "C-API floor"  # bare interpreter + ctypes over libonnxruntime + session + run
ALWAYS_ON = "FastAPI + uvicorn (always-on)"
# The same server held to the CPU share the Lambda targets get (their memory size buys it)
ALWAYS_ON_SHARE = "FastAPI + uvicorn, same CPU share"
