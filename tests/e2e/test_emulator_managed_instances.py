"""The emulator's Lambda Managed Instances environment: the real handler under the real runtime
client with ``AWS_LAMBDA_MAX_CONCURRENCY=N`` (N forked workers, each with its own init), one
Runtime API taking N concurrent ``/next`` polls, N invocations at once per environment and the
next one throttled, memory summed over the workers, one CPU share, no orphans at stop."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import psutil
import pytest
from botocore.exceptions import ClientError

from onnx_lambda.emulator import Emulator
from onnx_lambda.emulator.template import FunctionSpec, TemplateSpec
from onnx_lambda.server_process import ServerProcess, start_server_process
from onnx_lambda.source_tree import root
from tests.e2e.emulator_support import HANDLERS, lambda_client
from tests.support import cfn, models
from tests.support.s3_server import Counting, s3_server_fixture

s3_server = s3_server_fixture
pytestmark = pytest.mark.e2e
ROOT = root()
WORKERS = 3
FUNCTION = "InferenceManagedFunction"
OVERRIDES = {"ColdStartStrategy": "managed-instances", "CapacityProviderSubnetIds": "subnet-1"}
# 4096 MB at 4 GiB per vCPU: one vCPU shared by the workers
SETTINGS = {"ManagedInstancesConcurrency": WORKERS, "ManagedInstancesMemoryPerVCpu": 4}


def wait_until(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.linear(tmp_path_factory.mktemp("model") / "linear.onnx")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """template.yaml with the Managed Instances settings above."""
    return cfn.edited(tmp_path_factory.mktemp("project"), SETTINGS)


@pytest.fixture(scope="module")
def env_vars(model: Path) -> Path:
    path = model.with_name("env.json")
    path.write_text(json.dumps({"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}}))
    return path


@pytest.fixture(scope="module")
def served(model: Path, template: Path) -> Iterator[tuple[Emulator, list[str]]]:
    lines: list[str] = []
    emulator = Emulator(template, port=0, log=lines.append, concurrency=1, init_timeout_s=60.0,
                        parameter_overrides=OVERRIDES,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}})
    with emulator.running():
        yield emulator, lines


def ping(client: Any, hold_ms: int = 0) -> dict[str, Any]:
    response = client.invoke(FunctionName=FUNCTION, Qualifier="live",
                             Payload=json.dumps({"warmer": True, "holdMs": hold_ms}))
    assert "FunctionError" not in response
    return dict(json.loads(response["Payload"].read()))


def test_one_environment_serves_n_invocations_at_once_and_throttles_the_next(
        served: tuple[Emulator, list[str]]) -> None:
    emulator, lines = served
    pool = emulator.pools[FUNCTION]
    client = lambda_client(emulator.url)
    ping(client)  # the cold start: ready once the first worker polls
    env = pool.environments[0]
    wait_until(lambda: env.workers_ready == WORKERS)
    assert len(env.worker_init_ms) == WORKERS
    wait_until(lambda: sum(f"process {k}/{WORKERS} initialised" in "\n".join(lines)
                           for k in range(1, WORKERS + 1)) == WORKERS)  # (logged after)

    answers: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: answers.append(ping(client, 1500)))
               for _ in range(WORKERS)]
    for thread in threads:
        thread.start()
    wait_until(lambda: env.in_flight == WORKERS)
    with pytest.raises(ClientError) as throttled:  # environments (1) x processes (3) in use
        client.invoke(FunctionName=FUNCTION, Qualifier="live", Payload=b"{}")
    assert throttled.value.response["Error"]["Code"] == "TooManyRequestsException"
    for thread in threads:
        thread.join(60)

    assert len({answer["environmentId"] for answer in answers}) == WORKERS  # one per worker
    assert len(pool.environments) == 1
    held = pool.records[-WORKERS:]
    assert {record.environment_id for record in held} == {env.id}
    assert not any(record.cold for record in held)
    # one REPORT per invocation (each written just after its response)
    wait_until(lambda: sum(line.startswith("REPORT") for line in lines) == len(pool.records))


def test_memory_is_the_whole_environment_and_the_cpu_share_is_shared(
        served: tuple[Emulator, list[str]]) -> None:
    emulator, _ = served
    pool = emulator.pools[FUNCTION]
    client = lambda_client(emulator.url)
    ping(client)
    env = pool.environments[0]
    wait_until(lambda: env.workers_ready == WORKERS)
    assert env.pid is not None
    workers = psutil.Process(env.pid).children()
    assert len(workers) == WORKERS
    ping(client)  # its REPORT: after every worker's init
    # the sum over the runtime and its workers, not one process's
    rss_mb = sum(p.memory_info().rss for p in [psutil.Process(env.pid), *workers]) / 2**20
    assert pool.records[-1].max_memory_used_mb >= 0.9 * rss_mb
    cpu = pool.records[-1].cpu_limit
    assert cpu == "unlimited" or "1.00 vCPU" in cpu
    if cpu.startswith("cfs-quota"):  # one cgroup for all of them
        groups = {Path(f"/proc/{p.pid}/cgroup").read_text() for p in [*workers]}
        assert groups == {Path(f"/proc/{env.pid}/cgroup").read_text()}


def test_the_workers_share_one_tmp_and_one_download(
        tmp_path: Path, model: Path, template: Path, s3_server: tuple[str, Counting]) -> None:
    _, counting = s3_server
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="models")
    s3.upload_file(str(model), "models", "lin/model.onnx")
    s3.close()  # its pooled sockets (left to the collector: a ResourceWarning in a later test)
    cache = tmp_path / "tmp" / "onnx-lambda"  # the environment's /tmp, as the handler uses it
    emulator = Emulator(template, port=0, log=None, concurrency=1, init_timeout_s=60.0,
                        env_vars={FUNCTION: {"ONNX_LAMBDA_S3_CACHE_DIR": str(cache)}},
                        parameter_overrides={**OVERRIDES,
                                             "ModelS3Uri": "s3://models/lin/model.onnx"})
    with emulator.running():
        ping(lambda_client(emulator.url))
        env = emulator.pools[FUNCTION].environments[0]
        wait_until(lambda: env.workers_ready == WORKERS)  # each has loaded the model
    assert counting.gets == 1  # one download, found in the shared /tmp by the others
    assert (cache / "models" / "lin" / "model.onnx").is_file()


def test_an_init_error_in_every_worker_fails_the_cold_invocation() -> None:
    broken = FunctionSpec(name="Broken", handler="broken.handler", task_root=HANDLERS,
                          processes_per_environment=2, vcpus_per_environment=1.0)
    emulator = Emulator(TemplateSpec(functions={"Broken": broken}, routes=[]), port=0,
                        log=None)
    with emulator.running():
        response = lambda_client(emulator.url).invoke(FunctionName="Broken")
        error = json.loads(response["Payload"].read())
        assert response["FunctionError"] == "Unhandled"
        assert "cannot initialise" in error["errorMessage"]
        record = emulator.pools["Broken"].records[-1]
        assert record.cold and record.error_type is not None
        wait_until(lambda: not emulator.pools["Broken"].environments
                   or all(e.state == "dead" for e in emulator.pools["Broken"].environments))


def test_a_timeout_fails_its_invocation_alone_and_its_worker_runs_on() -> None:
    sleep = FunctionSpec(name="Sleep", handler="fns.sleep", task_root=HANDLERS, timeout_s=1.0,
                         processes_per_environment=2, vcpus_per_environment=1.0)
    emulator = Emulator(TemplateSpec(functions={"Sleep": sleep}, routes=[]), port=0,
                        log=None, concurrency=1)
    with emulator.running():
        client = lambda_client(emulator.url)
        client.invoke(FunctionName="Sleep", Payload=b'{"seconds": 0}')
        env = emulator.pools["Sleep"].environments[0]
        wait_until(lambda: env.free_workers == 2)
        response = client.invoke(FunctionName="Sleep", Payload=b'{"seconds": 3}')
        assert json.loads(response["Payload"].read())["errorType"] == "Sandbox.Timedout"
        assert env.free_workers == 1  # its worker still sleeps: one left to serve
        other = client.invoke(FunctionName="Sleep", Payload=b'{"seconds": 0}')
        assert "FunctionError" not in other
        assert emulator.pools["Sleep"].environments == [env] and not env.doomed
        wait_until(lambda: env.free_workers == 2)  # the late answer gives the worker back


def serve(template: Path, *args: str) -> ServerProcess:
    return start_server_process(["--template", str(template), "--concurrency", "1",
                                 "--init-timeout", "60", *args], cwd=ROOT)


def gone(processes: list[psutil.Process]) -> bool:
    return not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)


def test_serve_prints_the_processes_and_sigterm_leaves_no_orphans(template: Path,
                                                                  env_vars: Path) -> None:
    overrides = " ".join(f"{k}={v}" for k, v in OVERRIDES.items())
    server = serve(template, "--parameter-overrides", overrides, "--env-vars", str(env_vars))
    try:
        assert f"Managed Instances: {WORKERS} processes per environment" in server.errors()
        ping(lambda_client(server.url))
        runtime = psutil.Process(server.process.pid).children()
        assert len(runtime) == 1
        wait_until(lambda: len(runtime[0].children()) == WORKERS)
        processes = [runtime[0], *runtime[0].children()]
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(30)
    finally:
        server.stop()
    wait_until(lambda: gone(processes), 10)


def test_a_killed_emulator_takes_even_a_busy_worker_with_it(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(json.dumps({"Resources": {"Sleep": {
        "Type": "AWS::Serverless::Function",
        "Properties": {"CodeUri": str(HANDLERS), "Handler": "fns.sleep", "Timeout": 60,
                       "CapacityProviderConfig": {"PerExecutionEnvironmentMaxConcurrency": 2}},
    }}}))
    server = serve(template)
    try:
        client = lambda_client(server.url)
        client.invoke(FunctionName="Sleep", Payload=b'{"seconds": 0}')
        runtime = psutil.Process(server.process.pid).children()
        wait_until(lambda: len(runtime[0].children()) == 2)
        processes = [runtime[0], *runtime[0].children()]

        def sleep() -> None:  # a worker asleep in its handler for longer than the test waits
            with contextlib.suppress(Exception):  # the emulator dies under it
                client.invoke(FunctionName="Sleep", Payload=b'{"seconds": 30}')

        threading.Thread(target=sleep, daemon=True).start()
        wait_until(lambda: server.errors().count("START RequestId") == 2)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(30)
    finally:
        server.stop()
    wait_until(lambda: gone(processes), 10)
