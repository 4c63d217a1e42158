"""Execution-environment lifecycle: throttling at the concurrency limit, provisioned
concurrency, idle reaping, a killed environment, the memory limit, the CPU quota, and no
orphan processes after shutdown."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from onnx_lambda.emulator import Emulator
from onnx_lambda.emulator.template import RouteSpec, TemplateSpec, load_template
from onnx_lambda.server_process import start_server_process
from tests.e2e import emulator_support
from tests.e2e.emulator_support import TEMPLATE, call, lambda_client

pytestmark = pytest.mark.e2e
emu, client = emulator_support.emu, emulator_support.client


def wait_until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def only(function: str, **changes: Any) -> TemplateSpec:
    """The test template reduced to one function, with some properties changed."""
    spec = load_template(TEMPLATE)
    return TemplateSpec(
        functions={function: dataclasses.replace(spec.functions[function], **changes)},
        routes=[])


@pytest.fixture
def running() -> Iterator[Callable[..., Emulator]]:
    """Start emulators on demand; each is stopped (and checked for leftovers) at the end."""
    started: list[Any] = []

    def start(template: TemplateSpec, **kwargs: Any) -> Emulator:
        emulator = Emulator(template, port=0, log=None, **kwargs)
        context = emulator.running()
        context.__enter__()
        started.append(context)
        return emulator

    yield start
    for context in started:
        context.__exit__(None, None, None)


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(target()))
    thread.start()
    return thread, out


def test_concurrency_limit_throttles_with_429(client: Any, emu: Emulator) -> None:
    pool = emu.pools["Sleep"]  # ReservedConcurrentExecutions: 2

    def sleep() -> Any:
        response = client.invoke(FunctionName="Sleep", Payload=json.dumps({"seconds": 0.5}))
        response["Payload"].read()  # gives its connection back to the pool (else it leaks)
        return response

    slow = [in_thread(sleep) for _ in range(2)]
    wait_until(lambda: pool.in_use == 2)
    with pytest.raises(client.exceptions.TooManyRequestsException) as error:
        client.invoke(FunctionName="Sleep", Payload=json.dumps({"seconds": 0}))
    assert error.value.response["Error"]["Code"] == "TooManyRequestsException"
    assert error.value.response["Reason"] == "ReservedFunctionConcurrentInvocationLimitExceeded"
    for thread, out in slow:
        thread.join()
        assert "FunctionError" not in out[0]
    assert len(pool.environments) <= 2


def test_http_front_answers_a_throttle_as_api_gateway_does(
        running: Callable[..., Emulator]) -> None:
    spec = only("Sleep", reserved=1)
    route = RouteSpec("Sleep", "POST", "/sleep", "http-api")
    emulator = running(TemplateSpec(functions=spec.functions, routes=[route]))
    # the API event has no "seconds": the handler sleeps until its 1 s timeout
    slow, _ = in_thread(lambda: call(emulator.url + "/sleep", "POST", b"{}",
                                     {"Content-Type": "application/json"}))
    wait_until(lambda: emulator.pools["Sleep"].in_use == 1)
    status, _, body = call(emulator.url + "/sleep", "POST", b"{}",
                           {"Content-Type": "application/json"})
    assert status == 500 and json.loads(body) == {"message": "Internal Server Error"}
    slow.join()


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "response-stream"])
def test_a_function_url_answers_a_throttle_as_lambda_does(
        running: Callable[..., Emulator], streaming: bool) -> None:
    """No gateway in front: Lambda's own throttle (429, ``ThrottlingException``), which
    clients back off on, not a 500 (docs/explanation/emulator.md, "Throttles")."""
    emulator = running(only("Sleep", reserved=1, function_url=True, streaming=streaming))
    url = emulator.function_urls["Sleep"] + "/sleep"
    # the URL's event has no "seconds": the handler sleeps until its 1 s timeout
    slow, _ = in_thread(lambda: call(url, "POST", b"{}", {"Content-Type": "application/json"}))
    wait_until(lambda: emulator.pools["Sleep"].in_use == 1)
    status, headers, body = call(url, "POST", b"{}", {"Content-Type": "application/json"})
    assert status == 429 and headers["x-amzn-ErrorType"] == "ThrottlingException"
    assert json.loads(body) == {"message": "Rate Exceeded."}
    assert headers["x-amzn-RequestId"]
    slow.join()


def test_provisioned_environments_serve_without_cold_start(
        running: Callable[..., Emulator]) -> None:
    emulator = running(only("Echo", provisioned=2))
    pool = emulator.pools["Echo"]
    assert len(pool.environments) == 2 and all(e.state == "idle" for e in pool.environments)
    calls = [in_thread(lambda: emulator.call(emulator.invoke("Echo", {"hold": 1})))
             for _ in range(2)]
    results = []
    for thread, out in calls:
        thread.join()
        results.append(out[0])
    for result in results:
        body = json.loads(result.payload)
        assert body["initType"] == "provisioned-concurrency"
        assert result.record.cold is False and result.record.init_ms is None
        assert result.record.initialization_type == "provisioned-concurrency"
        assert "Init Duration" not in result.record.report_line()


def test_idle_environments_are_reaped(running: Callable[..., Emulator]) -> None:
    emulator = running(only("Echo"), idle_timeout_s=0.3)
    result = emulator.call(emulator.invoke("Echo"))
    pid = json.loads(result.payload)["pid"]
    wait_until(lambda: not emulator.pools["Echo"].environments)
    wait_until(lambda: not psutil.pid_exists(pid))
    assert emulator.call(emulator.invoke("Echo")).record.cold is True


def test_killed_environment_fails_one_request_then_recovers(
        running: Callable[..., Emulator]) -> None:
    emulator = running(only("Sleep", timeout_s=30.0))
    pool = emulator.pools["Sleep"]
    thread, out = in_thread(lambda: emulator.call(emulator.invoke("Sleep", {"seconds": 20})))
    wait_until(lambda: bool(pool.environments) and pool.environments[0].state == "busy")
    os.kill(pool.environments[0].pid or 0, signal.SIGKILL)
    thread.join()
    failed = out[0]
    body = json.loads(failed.payload)
    assert failed.error_type == "Runtime.ExitError"
    assert body["errorType"] == "Runtime.ExitError"
    assert body["errorMessage"].endswith("Error: Runtime exited with error: signal: killed")
    after = emulator.call(emulator.invoke("Sleep", {"seconds": 0}))
    assert after.error_type is None and after.record.cold is True
    idle = pool.environments[0]  # killed while idle: discarded, not handed a request
    os.kill(idle.pid or 0, signal.SIGKILL)
    wait_until(lambda: idle.state == "dead")
    again = emulator.call(emulator.invoke("Sleep", {"seconds": 0}))
    assert again.error_type is None and again.record.cold is True
    assert idle not in pool.environments


def test_memory_limit_kills_the_environment(running: Callable[..., Emulator]) -> None:
    emulator = running(only("Allocate"), cpu_limit="off")  # MemorySize: 128
    result = emulator.call(emulator.invoke("Allocate", {"mb": 400}))
    assert result.error_type == "Runtime.OutOfMemory"
    assert json.loads(result.payload)["errorMessage"].endswith("signal: killed")
    assert result.record.max_memory_used_mb == 128
    small = emulator.call(emulator.invoke("Allocate", {"mb": 1}))
    assert small.error_type is None and small.record.cold is True


def test_init_timeout_and_unstartable_environments(running: Callable[..., Emulator]) -> None:
    emulator = running(TemplateSpec(functions={
        "Slow": dataclasses.replace(only("Echo").functions["Echo"], name="Slow",
                                    handler="slow_init.handler"),
        "Nowhere": dataclasses.replace(only("Echo").functions["Echo"], name="Nowhere",
                                       task_root=Path("/nonexistent/task/root")),
    }, routes=[]), init_timeout_s=0.5)
    slow = emulator.call(emulator.invoke("Slow"))
    assert slow.error_type == "Sandbox.Timedout"
    assert not emulator.pools["Slow"].environments or \
        emulator.pools["Slow"].environments[0].state == "dead"
    nowhere = emulator.call(emulator.invoke("Nowhere"))
    assert nowhere.error_type == "Runtime.InvalidEntrypoint"
    assert "cannot start the runtime" in json.loads(nowhere.payload)["errorMessage"]
    wait_until(lambda: not emulator.pools["Nowhere"].environments)


def test_cpu_share_is_a_cfs_quota(running: Callable[..., Emulator]) -> None:
    emulator = running(only("Echo", memory_mb=512))
    result = emulator.call(emulator.invoke("Echo"))
    if not os.access("/sys/fs/cgroup/cpu", os.W_OK):  # no cgroup v1 cpu controller: pinning
        assert result.record.cpu_limit.startswith("pinned 1 core(s) for 0.29 vCPU")
        return
    pid = json.loads(result.payload)["pid"]
    line = next(li for li in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                if li.split(":")[1] == "cpu")
    group = Path("/sys/fs/cgroup/cpu") / line.split(":", 2)[2].lstrip("/")
    assert int((group / "cpu.cfs_quota_us").read_text()) == int(512 / 1769 * 100_000)
    assert result.record.cpu_limit == "cfs-quota 0.29 vCPU"
    assert "CPU: cfs-quota 0.29 vCPU" in result.record.report_line()


def tree(pid: int) -> list[int]:
    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGKILL])
def test_no_orphans_after_the_server_stops(stop_signal: int) -> None:
    """``onnx-lambda serve`` leaves no process behind: stopped cleanly (SIGTERM, as Ctrl-C)
    or killed outright (its environments die with it)."""
    server = start_server_process(["--template", str(TEMPLATE), "--quiet"])
    try:
        lam = lambda_client(server.url)
        for name in ("Echo", "Fail", "Http"):
            lam.invoke(FunctionName=name)
        children = tree(server.process.pid)
        assert len(children) >= 3
        server.process.send_signal(stop_signal)
        server.process.wait(30)
    finally:
        server.stop()
    wait_until(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status()
                               != psutil.STATUS_ZOMBIE for p in children), 10)
    if stop_signal == signal.SIGTERM:
        assert not list(Path("/sys/fs/cgroup/cpu").glob(f"onnx-lambda-{server.process.pid}-*"))
