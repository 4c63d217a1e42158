"""``onnx-lambda build-model`` and ``onnx-lambda inspect``, one module each."""

from __future__ import annotations

import argparse

from onnx_lambda.build_model.commands import build, inspect


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for command in (build, inspect):
        command.register(subparsers)
