"""Importing ``handler.app`` with a model configured (the whole init) in a fresh interpreter
loads nothing heavy: the cold path is the standard library, numpy and onnxruntime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FORBIDDEN = ["boto3", "botocore", "urllib3", "requests", "pydantic", "torch", "pandas", "scipy",
             "sklearn", "transformers", "aws_lambda_powertools", "tokenizers", "aws_xray_sdk",
             "wrapt"]
ROOT = Path(__file__).parents[2]


def loaded_by_init(model_dir: Path, **variables: str) -> set[str]:
    code = ("import json, sys; import handler.app; "
            "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))")
    env = {k: v for k, v in os.environ.items() if k != "ONNX_LAMBDA_TRACING"}
    env.update(ONNX_LAMBDA_MODEL=str(model_dir / "linear.onnx"), PYTHONPATH=str(ROOT),
               **variables)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_init_imports_nothing_heavy(model_dir: Path) -> None:
    loaded = loaded_by_init(model_dir)
    assert {"numpy", "onnxruntime", "handler"} <= loaded  # the probe really ran the init
    assert loaded.isdisjoint(FORBIDDEN), sorted(loaded & set(FORBIDDEN))


def test_tracing_off_keeps_the_x_ray_sdk_and_powertools_off_the_cold_path(
        model_dir: Path) -> None:
    off = loaded_by_init(model_dir, ONNX_LAMBDA_TRACING="off")
    assert off.isdisjoint({"aws_xray_sdk", "aws_lambda_powertools", "botocore", "wrapt"})
    # the probe can tell: with tracing on, the SDK (and its botocore) are loaded at init
    on = loaded_by_init(model_dir, ONNX_LAMBDA_TRACING="on")
    assert {"aws_xray_sdk", "botocore"} <= on
    assert "aws_lambda_powertools" not in on
