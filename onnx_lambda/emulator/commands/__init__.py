"""``onnx-lambda serve`` and ``onnx-lambda invoke`` (the local emulator's commands), one module
each (shared options in ``options``)."""

from __future__ import annotations

import argparse

from onnx_lambda.emulator.commands import invoke, serve


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for command in (serve, invoke):
        command.register(subparsers)
