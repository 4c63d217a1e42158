"""``onnx-lambda tune`` (``tune``; ``tune_managed`` for ``--managed-instances``), ``simulate``
and ``price``, one module each (shared options in ``options``). Heavy imports stay inside the
commands so ``onnx-lambda --help`` is instant."""

from __future__ import annotations

import argparse

from onnx_lambda.plan.commands import price, simulate, tune


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for command in (tune, simulate, price):
        command.register(subparsers)
