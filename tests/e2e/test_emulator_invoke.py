"""The Invoke API through a real boto3 Lambda client -> real awslambdaric -> tiny handlers."""

from __future__ import annotations

import base64
import json
import sysconfig
import time
from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.emulator import Emulator
from tests.e2e import emulator_support

pytestmark = pytest.mark.e2e
emu, client = emulator_support.emu, emulator_support.client  # the shared fixtures


def payload(response: dict[str, Any]) -> Any:
    return json.loads(response["Payload"].read())


def test_success_is_a_cold_start_then_warm(client: Any, emu: Emulator) -> None:
    first = client.invoke(FunctionName="Echo", Payload=json.dumps({"n": 1}))
    second = client.invoke(FunctionName="Echo", Payload=json.dumps({"n": 2}))
    one, two = payload(first), payload(second)
    assert first["StatusCode"] == 200 and "FunctionError" not in first
    assert first["ExecutedVersion"] == "$LATEST"
    assert one["event"] == {"n": 1} and two["event"] == {"n": 2}
    assert one["cold"] is True and two["cold"] is False and one["pid"] == two["pid"]
    assert one["functionName"] == "Echo"
    assert one["invokedArn"] == "arn:aws:lambda:us-east-1:123456789012:function:Echo"
    assert 0 < one["remainingMs"] <= 5000
    records = [r for r in emu.records("Echo") if r.request_id in (one["requestId"],
                                                                    two["requestId"])]
    assert [r.cold for r in records] == [True, False]
    assert records[0].init_ms is not None and records[0].init_ms > 0
    assert records[1].init_ms is None
    assert all(r.max_memory_used_mb > 0 and r.billed_ms >= 1 for r in records)


def test_lambda_environment_variables(client: Any) -> None:
    env = payload(client.invoke(FunctionName="Echo"))["env"]
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == "Echo"
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "1024"  # !Ref EchoMemory default
    assert env["AWS_LAMBDA_FUNCTION_VERSION"] == "$LATEST"
    assert env["AWS_LAMBDA_INITIALIZATION_TYPE"] == "on-demand"
    assert env["AWS_REGION"] == "us-east-1"
    assert env["_HANDLER"] == "fns.echo"
    assert env["LAMBDA_TASK_ROOT"].endswith("tests/e2e/handlers")
    assert env["AWS_LAMBDA_LOG_GROUP_NAME"] == "/aws/lambda/Echo"
    assert env["EMU_GLOBAL"] == "from-globals"  # Globals merged
    assert env["EMU_FLAVOUR"] == "plain"  # !If on a condition
    assert env["EMU_STACK"] == "onnx-lambda-local-plain"  # !Sub with a pseudo parameter


def test_alias_qualifier_reports_the_executed_version(client: Any) -> None:
    response = client.invoke(FunctionName="Echo", Qualifier="live")
    assert response["ExecutedVersion"] == "1"
    assert payload(response)["invokedArn"].endswith("function:Echo:live")
    by_arn = client.invoke(FunctionName="arn:aws:lambda:us-east-1:123456789012:function:Echo")
    assert by_arn["StatusCode"] == 200


def test_unknown_function_or_qualifier_is_resource_not_found(client: Any) -> None:
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.invoke(FunctionName="Nope")
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.invoke(FunctionName="Echo", Qualifier="staging")


def test_unhandled_exception(client: Any) -> None:
    response = client.invoke(FunctionName="Fail", LogType="Tail")
    body = payload(response)
    assert response["FunctionError"] == "Unhandled"
    assert body["errorType"] == "Boom" and body["errorMessage"] == "it broke"
    assert body["stackTrace"]
    log = base64.b64decode(response["LogResult"]).decode()
    assert "about to fail" in log and "REPORT RequestId:" in log
    assert "Error Type: Boom" in log


def test_tail_log_has_the_invocation_lines(client: Any) -> None:
    response = client.invoke(FunctionName="Echo", LogType="Tail")
    request_id = payload(response)["requestId"]
    lines = base64.b64decode(response["LogResult"]).decode().splitlines()
    assert lines[0] == f"START RequestId: {request_id} Version: $LATEST"
    assert f"echo {request_id}" in lines
    assert lines[-2] == f"END RequestId: {request_id}"
    assert lines[-1].startswith(f"REPORT RequestId: {request_id}\tDuration: ")
    assert "\tMax Memory Used: " in lines[-1] and "\tCPU: " in lines[-1]


def test_timeout_replaces_the_environment(client: Any, emu: Emulator) -> None:
    response = client.invoke(FunctionName="Sleep", Payload=json.dumps({"seconds": 3}))
    body = payload(response)
    assert response["FunctionError"] == "Unhandled"
    assert body["errorType"] == "Sandbox.Timedout"
    assert body["errorMessage"].endswith("Task timed out after 1.00 seconds")
    after = client.invoke(FunctionName="Sleep", Payload=json.dumps({"seconds": 0}))
    assert "FunctionError" not in after
    assert emu.records("Sleep")[-1].cold is True  # a fresh environment


def test_init_error(client: Any) -> None:
    response = client.invoke(FunctionName="Broken")
    body = payload(response)
    assert response["FunctionError"] == "Unhandled"
    assert body["errorType"] == "RuntimeError"
    assert body["errorMessage"] == "cannot initialise: model missing"


def test_event_invocation_runs_in_the_background(client: Any, emu: Emulator) -> None:
    before = len(emu.records("Echo"))
    response = client.invoke(FunctionName="Echo", InvocationType="Event",
                             Payload=json.dumps({"async": True}))
    assert response["StatusCode"] == 202
    deadline = time.monotonic() + 20
    while len(emu.records("Echo")) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(emu.records("Echo")) == before + 1


def test_dry_run(client: Any, emu: Emulator) -> None:
    before = len(emu.records())
    assert client.invoke(FunctionName="Echo", InvocationType="DryRun")["StatusCode"] == 204
    assert len(emu.records()) == before


def test_request_too_large(client: Any) -> None:
    with pytest.raises(client.exceptions.RequestTooLargeException):
        client.invoke(FunctionName="Echo", Payload=json.dumps({"x": "y" * 6_300_000}))


def test_response_too_large(client: Any, emu: Emulator) -> None:
    # The next request is sent at once: it must never reach the environment that was
    # killed for the oversized response but whose exit the emulator has not yet seen.
    for _ in range(3):
        response = client.invoke(FunctionName="Big", Payload=json.dumps({"bytes": 6_300_000}))
        assert response["FunctionError"] == "Unhandled"
        assert payload(response)["errorType"] == "Function.ResponseSizeTooLarge"
        ok = client.invoke(FunctionName="Big", Payload=json.dumps({"bytes": 10}))
        assert payload(ok) == "x" * 10
        failed, served = emu.records("Big")[-2:]
        assert served.cold and served.environment_id != failed.environment_id


def test_client_context_reaches_the_handler(client: Any) -> None:
    context = base64.b64encode(json.dumps({"custom": {"k": "v"}}).encode()).decode()
    assert client.invoke(FunctionName="Echo", ClientContext=context)["StatusCode"] == 200


def test_invalid_json_payload(client: Any) -> None:
    with pytest.raises(client.exceptions.InvalidRequestContentException):
        client.invoke(FunctionName="Echo", Payload=b"{not json")


def test_runtime_processes_see_site_packages_but_run_none_of_its_pth_hooks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer venv's ``.pth`` hooks (an editable install's finder, setuptools' shim) are
    not Lambda's: the runtime starts without ``site`` and appends the site folders after the
    standard library, with the folders their ``.pth`` files name, as ``site`` would, but runs
    none of their ``import`` lines."""
    import site

    extra, linked = tmp_path / "site-packages", tmp_path / "linked"
    extra.mkdir()
    linked.mkdir()
    ran = tmp_path / "hook-ran"
    (extra / "zz_hook.pth").write_text(
        f"import pathlib; pathlib.Path({str(ran)!r}).touch()\n{linked}\n")
    real = [p for p in site.getsitepackages() if Path(p).is_dir()]
    assert real  # this interpreter's own, where awslambdaric is installed
    monkeypatch.setattr(site, "getsitepackages", lambda: [*real, str(extra)])
    emulator = Emulator(emulator_support.TEMPLATE, port=0, log=None)
    with emulator.running():
        response = emulator_support.lambda_client(emulator.url).invoke(
            FunctionName="Echo", Payload=b"{}")
    facts = payload(response)
    assert "FunctionError" not in response and facts["noSite"] == 1
    assert not ran.exists()  # the hook did not run
    path = facts["sysPath"]
    stdlib = path.index(sysconfig.get_path("stdlib"))
    assert path.index(real[0]) > stdlib and path.index(str(extra)) > path.index(real[0])
    assert path[path.index(str(extra)) + 1] == str(linked)  # the .pth's folder, after its own
    assert path.index(str(emulator_support.HANDLERS)) < stdlib  # the task root comes first
