"""BASELINE — the always-on server: the FastAPI app of ``fastapi_mangum`` served by uvicorn,
one process, model loaded at startup.

    MODEL_PATH=model.onnx python -m benchmarks.baselines.always_on --port 8080
"""

from __future__ import annotations

import argparse

import uvicorn

from benchmarks.baselines.fastapi_mangum import app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
