"""``onnx-lambda invoke``: one-shot invocations from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.emulator_support import TEMPLATE

pytestmark = pytest.mark.e2e


def invoke(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "onnx_lambda.cli", "invoke", *args,
                           "--template", str(TEMPLATE)], input=stdin, capture_output=True,
                          timeout=60, check=False)


def test_invoke_prints_the_response_and_the_report(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"n": 7}')
    env_vars = tmp_path / "env.json"
    env_vars.write_text(json.dumps({"Parameters": {"EMU_ALL": "p"}, "Echo": {"EMU_ONE": "e"}}))
    done = invoke("Echo", "-e", str(event), "--env-vars", str(env_vars),
                  "--parameter-overrides", "Flavour=fancy")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["event"] == {"n": 7} and body["cold"] is True
    assert body["env"]["EMU_ALL"] == "p" and body["env"]["EMU_ONE"] == "e"
    assert body["env"]["EMU_FLAVOUR"] == "fancy-us-east-1"
    log = done.stderr.decode()
    assert f"START RequestId: {body['requestId']} Version: $LATEST" in log
    assert f"echo {body['requestId']}" in log
    assert "\tInit Duration: " in log and f"REPORT RequestId: {body['requestId']}" in log


def test_invoke_errors_set_the_exit_code() -> None:
    failed = invoke("Fail", "-e", "-", stdin=b"{}")
    assert failed.returncode == 1 and json.loads(failed.stdout)["errorType"] == "Boom"
    missing = invoke("Nope")
    assert missing.returncode == 2 and b"Function not found" in missing.stderr
    bad = invoke("Echo", "--parameter-overrides", "Bogus=1")
    assert bad.returncode == 2 and b"unknown parameter(s): Bogus" in bad.stderr
