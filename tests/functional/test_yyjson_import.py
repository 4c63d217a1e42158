"""``cyyjson`` (yyjson's C module; its first ``Document`` imports ``pathlib``, ≈ 16 M instructions)
is loaded by the first float32 answer of ``json_codec.SMALL`` values or more: never at the
handler's init, never for small outputs, float16 or request bodies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from onnx_lambda.tiny_models import WEIGHTS, linear


def _run(program: str, env: dict[str, str] | None = None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          check=True, env=env).stdout.splitlines()
    return [line[3:] for line in out if line.startswith("=> ")]  # not the handler's log lines


def test_small_arrays_float16_and_request_bodies_never_import_it() -> None:
    program = (
        "import array, sys\n"
        "from handler.json_codec import loads, tensor_values\n"
        "from handler.ort.tensor import Tensor\n"
        "tensor_values(Tensor('float32', (1, 10), array.array('f', range(10)).tobytes()))\n"
        "tensor_values(Tensor('float16', (64,), bytes(128)))\n"
        "loads(b'{\"inputs\": [' + b'0.5,' * 999 + b'1]}')\n"
        "small = 'cyyjson' not in sys.modules\n"
        "tensor_values(Tensor('float32', (1, 384), bytes(1536)))\n"
        "print('=>', small, 'cyyjson' in sys.modules)\n")
    assert _run(program) == ["True True"]


def test_the_handler_imports_it_on_its_first_large_answer_only(tmp_path: Path) -> None:
    linear(tmp_path / "linear.onnx")
    program = (
        "import json, sys\n"
        "import handler.app as app\n"
        "from onnx_lambda.plan.subject import http_api_event\n"
        "from onnx_lambda.lambda_context import LambdaContext\n"
        "def ask(rows):\n"
        "    body = json.dumps({'inputs': {'x': [[1.0, 2.0, 3.0, 4.0]] * rows}}).encode()\n"
        "    answer = app.handler(http_api_event(body), LambdaContext())\n"
        "    print('=>', answer['statusCode'], 'cyyjson' in sys.modules)\n"
        "    print('=>', answer['body'])\n"
        "print('=>', 'cyyjson' in sys.modules)\n"
        "ask(1)\n"
        "ask(16)\n")
    env = {**os.environ, "ONNX_LAMBDA_MODEL": str(tmp_path / "linear.onnx")}
    init, one, one_body, many, many_body = _run(program, env)
    assert (init, one, many) == ("False", "200 False", "200 True")  # 2 values, then 32
    row = [float(v) for v in [1.0, 2.0, 3.0, 4.0] @ WEIGHTS]
    assert json.loads(one_body) == {"outputs": {"y": [row]}}
    assert json.loads(many_body) == {"outputs": {"y": [row] * 16}}
