"""Puts ``onnx-lambda serve`` on uvicorn (``ONNX_LAMBDA_HTTP=uvicorn``) when started with
this folder on ``PYTHONPATH``: the comparison in docs/explanation/emulator.md (the runtime-client
processes it starts are left alone)."""

import os
import sys

if os.environ.get("ONNX_LAMBDA_HTTP") == "uvicorn" and "onnx_lambda.cli" in sys.orig_argv:
    from tests.support.uvicorn_server import install

    install()
