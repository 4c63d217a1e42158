"""Importing ``handler.app`` with a model configured (the whole init) in a fresh interpreter
loads nothing heavy: the cold path is the standard library, numpy and onnxruntime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FORBIDDEN = ["boto3", "botocore", "urllib3", "requests", "pydantic", "torch", "pandas", "scipy",
             "sklearn", "transformers", "aws_lambda_powertools", "tokenizers"]
ROOT = Path(__file__).parents[2]


def test_init_imports_nothing_heavy(model_dir: Path) -> None:
    code = ("import json, sys; import handler.app; "
            "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))")
    env = {**os.environ, "ONNX_LAMBDA_MODEL": str(model_dir / "linear.onnx"),
           "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert {"numpy", "onnxruntime", "handler"} <= loaded  # the probe really ran the init
    assert loaded.isdisjoint(FORBIDDEN), sorted(loaded & set(FORBIDDEN))
