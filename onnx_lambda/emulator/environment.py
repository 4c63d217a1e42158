"""One execution environment: a child process running the real runtime client
(``python -m awslambdaric HANDLER``) against its own Runtime API endpoint.

Lifecycle: ``start()`` spawns the child (cold start begins); the runtime's first ``/next``
ends init (``init_ms``); each ``invoke()`` hands one invocation to the waiting ``/next``
and returns when the runtime posts ``/response`` or ``/error`` (a streamed ``/response``:
when its body ends, the caller reading it meanwhile through ``Invocation.on_stream``). The
function timeout, the memory limit (polled peak RSS of the process tree) and an unexpected
exit all end in
:meth:`Environment._on_exit`, which fails the current invocation with Lambda's error
payload; a dead environment is never reused.

The child's stdout/stderr go to a pipe (1 MB where the kernel allows) that the emulator
drains when a result arrives, on every memory poll (20 ms) and at exit, rather than on every
write: waking the emulator for each line the handler prints (an EMF metrics line per request
is common) put a context switch in the middle of every warm invocation. Lines written
during an invocation are attached to it (for ``LogType=Tail``); the drain before a result
is accepted makes everything the handler printed before returning belong to its invocation.

A Lambda Managed Instances function (``processes_per_environment`` N) runs one runtime with
``AWS_LAMBDA_MAX_CONCURRENCY=N``: awslambdaric forks N workers (one ``/tmp``, one cgroup),
each importing the handler and polling ``/next``. The first poll ends the environment's init
(``init_ms``); :attr:`Environment.workers_ready` counts the workers initialised so far (the
most that have been polling or serving at once); :attr:`Environment.free_workers`, those less
any still running an invocation that timed out, is how many it takes at the same time. Its
log lines are attached to an invocation when only one is in flight, else by the request id
they carry (LMI logs are JSON with ``requestId``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from onnx_lambda.emulator import ids
from onnx_lambda.emulator.http11 import HttpServer
from onnx_lambda.emulator.http_stream import BodyStream
from onnx_lambda.emulator.limits import CpuLimiter, PeakRss, die_with_parent, tree_pids
from onnx_lambda.emulator.runtime_api import read_whole, runtime_api_server, stream_ended
from onnx_lambda.emulator.runtime_launch import lambda_environment, runtime_command
from onnx_lambda.emulator.template import FunctionSpec

MEMORY_POLL_S = 0.02
PIPE_BYTES = 1 << 20  # the default pipe-max-size
PIDS_REFRESH_POLLS = 50


def error_payload(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


@dataclass
class Invocation:
    """One invocation on its way through an environment."""

    payload: bytes
    invoked_arn: str
    client_context: str | None = None
    request_id: str = field(default_factory=ids.request_id)
    trace_id: str = field(default_factory=ids.trace_id)
    deadline_ms: int = 0
    delivered_at: float | None = None
    log: list[str] = field(default_factory=list)
    # called when the runtime starts a streaming response (content type, body); None: buffered
    on_stream: Callable[[str, BodyStream], None] | None = None


@dataclass(frozen=True)
class Outcome:
    """The runtime's answer (or Lambda's error when the environment failed)."""

    payload: bytes
    error_type: str | None  # None: success
    duration_ms: float


class EnvironmentFailed(Exception):
    """The environment died before it was ready (init error, exit, init timeout)."""

    def __init__(self, payload: bytes, error_type: str) -> None:
        super().__init__(error_type)
        self.payload = payload
        self.error_type = error_type


class Environment:
    """An execution environment: one runtime process, or N workers under Managed Instances."""

    def __init__(self, spec: FunctionSpec, *, init_type: str, cpu: CpuLimiter,
                 enforce_memory: bool, env_overrides: dict[str, str],
                 on_log: Callable[[Environment, str], None]) -> None:
        self.spec = spec
        self.id = uuid.uuid4().hex
        self.init_type = init_type
        self.state = "new"  # new -> init -> idle <-> busy -> dead
        self.init_ms: float | None = None
        self.capacity = spec.processes_per_environment or 1
        self.workers_ready = 0
        self.worker_init_ms: list[float] = []  # each worker's init, in the order they polled
        self.invocations = 0
        self.last_used = time.monotonic()
        self.max_memory_mb = 0.0
        self._cpu = cpu
        self._enforce_memory = enforce_memory
        self._env_overrides = env_overrides
        self._on_log = on_log
        self._loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[float] = self._loop.create_future()
        self._queue: asyncio.Queue[Invocation] = asyncio.Queue(maxsize=self.capacity)
        self._current: dict[str, tuple[Invocation, asyncio.Future[Outcome]]] = {}
        self._delivered: set[str] = set()  # handed to a worker, no result yet
        self._polling = 0  # workers blocked in /next
        self._init_error: tuple[bytes, str] | None = None
        self._kill_reason: str | None = None
        self._partial = b""
        self._rss: PeakRss | None = None
        self._polls = 0
        self._api: HttpServer | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._streams: set[asyncio.Task[tuple[bytes, str | None]]] = set()
        self.exited = asyncio.Event()

    @property
    def pid(self) -> int | None:
        """The runtime process (the root of the environment's process tree)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def in_flight(self) -> int:
        """Invocations handed to the environment and not yet answered."""
        return len(self._current)

    @property
    def free_workers(self) -> int:
        """Workers that can take an invocation: those initialised, less any still running one
        that has timed out (under Managed Instances its code runs on)."""
        return self.workers_ready - len(self._delivered - self._current.keys())

    @property
    def doomed(self) -> bool:
        """Dead, or killed and not yet reaped: never hand it another invocation."""
        return self.state == "dead" or self._kill_reason is not None

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        self.state = "init"
        self._api = runtime_api_server(self)
        port = await self._api.start("127.0.0.1", 0)
        env = lambda_environment(self.spec, init_type=self.init_type, env_id=self.id,
                                 runtime_api=f"127.0.0.1:{port}",
                                 overrides=self._env_overrides)
        cpu_step = self._cpu.prepare(self.id, self.spec.vcpus)

        def preexec() -> None:
            die_with_parent()
            cpu_step()

        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._spawned_at = time.perf_counter()
        try:
            self._proc = subprocess.Popen(
                runtime_command(self.spec), cwd=self.spec.task_root, env=env,
                stdin=subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
                start_new_session=True, preexec_fn=preexec)
        except (OSError, subprocess.SubprocessError) as exc:  # e.g. a missing task root
            os.close(read_fd)
            self.state = "dead"
            self._cpu.release(self.id)
            self.exited.set()
            raise EnvironmentFailed(error_payload(
                "Runtime.InvalidEntrypoint", f"cannot start the runtime: {exc}"),
                "Runtime.InvalidEntrypoint") from exc
        finally:
            os.close(write_fd)
        self._rss = PeakRss(self._proc.pid)
        with contextlib.suppress(OSError):  # fewer stalls for a chatty handler
            fcntl.fcntl(read_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self._out_fd = read_fd
        self._pidfd = os.pidfd_open(self._proc.pid)
        self._loop.add_reader(self._pidfd, self._on_exit)
        self._poll_memory()

    async def wait_ready(self, timeout_s: float) -> float:
        """Wait for init to end; returns the init duration in ms."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), timeout_s)
        except TimeoutError:
            self.kill("init-timeout")
            return await self._ready

    def kill(self, reason: str = "killed") -> None:
        if self._proc is None or self.state == "dead":
            return
        self._kill_reason = self._kill_reason or reason
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    async def close(self) -> None:
        """Kill the process (if alive) and release everything."""
        self.kill("shutdown")
        if self._proc is not None:
            await self.exited.wait()
        if self._api is not None:
            await self._api.close()
            self._api = None

    # -- invocations -------------------------------------------------------------------
    async def invoke(self, invocation: Invocation) -> Outcome:
        future: asyncio.Future[Outcome] = self._loop.create_future()
        self._current[invocation.request_id] = (invocation, future)
        self.state = "busy"
        self._queue.put_nowait(invocation)
        try:
            return await future
        finally:
            del self._current[invocation.request_id]
            self.invocations += 1
            self.last_used = time.monotonic()
            self._cancel_timer(invocation.request_id)
            if self.state == "busy" and not self._current:
                self.state = "idle"
            # off the response path: the peak this invocation reached shows in the next
            # REPORT (and in this one through the poll, when it lasted a poll interval)
            self._loop.call_soon(self._note_memory)

    # -- RuntimeSink (called by the Runtime API) -----------------------------------------
    async def next_invocation(self) -> Invocation:
        if not self._ready.done():
            self.init_ms = (time.perf_counter() - self._spawned_at) * 1000.0
            self.state = "idle"
            self._ready.set_result(self.init_ms)
        self._polling += 1
        if self._polling + len(self._delivered) > self.workers_ready:
            self._worker_ready()
        try:
            invocation = await self._queue.get()
        finally:
            self._polling -= 1
        self._delivered.add(invocation.request_id)
        invocation.delivered_at = time.perf_counter()
        invocation.deadline_ms = int(time.time() * 1000 + self.spec.timeout_s * 1000)
        self._timers[invocation.request_id] = self._loop.call_later(
            self.spec.timeout_s, self._timed_out, invocation.request_id)
        return invocation

    def complete(self, request_id: str, body: bytes, error_type: str | None) -> str | None:
        if request_id not in self._current:
            if request_id in self._delivered:  # a Managed Instances worker, past its timeout
                self._delivered.discard(request_id)
                return f"Invocation {request_id} already timed out"
            return f"Invalid request ID: {request_id}"
        invocation, future = self._current[request_id]
        if future.done():
            return f"Invocation {request_id} already completed"
        self._cancel_timer(request_id)
        self._delivered.discard(request_id)
        self._drain()
        if error_type is not None:
            error_type = _error_type(body, error_type)
        future.set_result(Outcome(body, error_type, self._elapsed_ms(invocation)))
        if error_type == "Function.ResponseSizeTooLarge" and self.capacity == 1:
            # the runtime client does not survive the 413 (an LMI worker logs it, goes on)
            self.kill("response-too-large")
        return None

    def stream(self, request_id: str, content_type: str, body: BodyStream) -> str | None:
        entry = self._current.get(request_id)
        if entry is None or entry[1].done():
            return f"Invalid request ID: {request_id}"
        if entry[0].on_stream is None:  # a buffered invocation: read whole, as Lambda does
            task = self._loop.create_task(read_whole(body))
        else:
            entry[0].on_stream(content_type, body)
            task = self._loop.create_task(stream_ended(body))
        self._streams.add(task)
        task.add_done_callback(lambda done: self._stream_done(request_id, done))
        return None

    def _stream_done(self, request_id: str, done: asyncio.Task[tuple[bytes, str | None]],
                     ) -> None:
        self._streams.discard(done)
        if not done.cancelled() and self._kill_reason is None:  # else the exit says why
            self.complete(request_id, *done.result())

    def init_failed(self, body: bytes, error_type: str | None) -> None:
        self._init_error = (body, _error_type(body, error_type or "Runtime.Unknown"))

    # -- internals ---------------------------------------------------------------------
    def _worker_ready(self) -> None:
        """One more worker is polling or serving than ever before: its init has ended."""
        self.workers_ready += 1
        self.worker_init_ms.append((time.perf_counter() - self._spawned_at) * 1000.0)
        if self.capacity > 1:
            self._refresh_pids()  # the forked workers count towards the memory
            self._on_log(self, f"[{self.spec.name}] environment {self.id[:8]} process "
                               f"{self.workers_ready}/{self.capacity} initialised in "
                               f"{self.worker_init_ms[-1]:.1f} ms")

    def _timed_out(self, request_id: str) -> None:
        """The function timeout: the environment is killed, except under Managed Instances,
        where the invocation fails alone and its worker runs on (AWS: "Understanding the
        Lambda Managed Instances execution environment", independent timeouts)."""
        self._timers.pop(request_id, None)
        if self.capacity == 1:
            self.kill("timeout")
            return
        invocation, future = self._current[request_id]
        if not future.done():
            self._drain()
            future.set_result(Outcome(*self._timeout_error(request_id),
                                      self._elapsed_ms(invocation)))

    def _timeout_error(self, request_id: str) -> tuple[bytes, str]:
        message = f"Task timed out after {self.spec.timeout_s:.2f} seconds"
        return (error_payload("Sandbox.Timedout", f"RequestId: {request_id} Error: {message}"),
                "Sandbox.Timedout")

    def _cancel_timer(self, request_id: str) -> None:
        timer = self._timers.pop(request_id, None)
        if timer is not None:
            timer.cancel()

    def _elapsed_ms(self, invocation: Invocation) -> float:
        start = invocation.delivered_at or time.perf_counter()
        return (time.perf_counter() - start) * 1000.0

    def _drain(self) -> None:
        while self._out_fd >= 0:
            try:
                data = os.read(self._out_fd, 65536)
            except BlockingIOError:
                return
            if not data:
                return
            self._lines(data)

    def _lines(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace").replace("\r", "\n")
            for request_id, (invocation, _) in self._current.items():
                if len(self._current) == 1 or request_id in line:
                    invocation.log.append(line)
            self._on_log(self, line)

    def _refresh_pids(self) -> None:
        if self._proc is not None and self._rss is not None and self.state != "dead":
            self._rss.track(tree_pids(self._proc.pid))

    def _note_memory(self) -> None:
        if self._rss is not None and self.state != "dead":
            self.max_memory_mb = max(self.max_memory_mb, self._rss.mb())

    def _poll_memory(self) -> None:
        if self.state == "dead":
            return
        self._drain()
        if self.state in ("init", "busy"):
            self._polls += 1
            if self._polls % PIDS_REFRESH_POLLS == 0:
                self._refresh_pids()
            used = self._rss.mb() if self._rss is not None else 0.0
            self.max_memory_mb = max(self.max_memory_mb, used)
            if self._enforce_memory and used > self.spec.memory_mb:
                self.kill("memory")
        self._loop.call_later(MEMORY_POLL_S, self._poll_memory)

    def _exit_error(self, request_id: str) -> tuple[bytes, str]:
        assert self._proc is not None
        if self._kill_reason == "timeout":
            return self._timeout_error(request_id)
        message = f"Runtime exited with error: {exit_status(self._proc.returncode or 0)}"
        error_type = ("Runtime.OutOfMemory" if self._kill_reason == "memory"
                      else "Runtime.ExitError")
        return error_payload(error_type, f"RequestId: {request_id} Error: {message}"), error_type

    def _on_exit(self) -> None:
        assert self._proc is not None
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._proc.wait()
        with contextlib.suppress(ProcessLookupError):  # a handler's own children
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._drain()
        if self._partial:
            self._lines(b"\n")
        os.close(self._out_fd)
        self._out_fd = -1
        self.state = "dead"
        self._cpu.release(self.id)
        if self._rss is not None:
            self._rss.close()
        if not self._ready.done():
            self.init_ms = (time.perf_counter() - self._spawned_at) * 1000.0
            if self._init_error is None:
                self._init_error = self._exit_error("")
                if self._kill_reason == "init-timeout":
                    self._init_error = (error_payload(
                        "Sandbox.Timedout", "INIT phase timed out"), "Sandbox.Timedout")
            self._ready.set_exception(EnvironmentFailed(*self._init_error))
            self._ready.exception()  # retrieved here: a provisioned start may never await it
        for invocation, future in self._current.values():
            if not future.done():
                payload, error_type = self._exit_error(invocation.request_id)
                future.set_result(Outcome(payload, error_type, self._elapsed_ms(invocation)))
        self.exited.set()



def exit_status(code: int) -> str:
    """How Lambda words a runtime exit: ``exit status 1`` / ``signal: killed``."""
    if code >= 0:
        return f"exit status {code}"
    return f"signal: {(signal.strsignal(-code) or str(-code)).lower()}"


def _error_type(body: bytes, default: str) -> str:
    """The ``errorType`` of a runtime's error document, else ``default``."""
    try:
        return str(json.loads(body).get("errorType") or default)
    except (ValueError, AttributeError):
        return default
