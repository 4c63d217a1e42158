"""``serve``/``invoke`` options: ``--model`` is ``ONNX_LAMBDA_MODEL`` for every function, on top of
an ``--env-vars`` file (SAM's format) and winning over its shared entry."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from onnx_lambda.emulator.commands.options import add_common, emulator_kwargs


def env_vars(argv: list[str]) -> object:
    parser = argparse.ArgumentParser()
    add_common(parser)
    return emulator_kwargs(parser.parse_args(argv))["env_vars"]


def test_model_sets_every_functions_model(tmp_path: Path) -> None:
    assert env_vars([]) is None
    assert env_vars(["--model", "models/mine"]) == {
        "Parameters": {"ONNX_LAMBDA_MODEL": "models/mine"}}
    file = tmp_path / "env.json"
    file.write_text(json.dumps({"Parameters": {"ONNX_LAMBDA_MODEL": "a", "X": "1"},
                                "WarmerFunction": {"Y": "2"}}))
    assert env_vars(["--env-vars", str(file), "--model", "b"]) == {
        "Parameters": {"ONNX_LAMBDA_MODEL": "b", "X": "1"}, "WarmerFunction": {"Y": "2"}}
