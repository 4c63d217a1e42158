"""The execution environments of one function, scheduled the way Lambda schedules them.

- A free warm environment takes the request (provisioned ones first, then the most recently
  used, so that the others age out); otherwise a new one is started (a cold start, whose
  invocation waits for init) as long as the concurrency limit allows; beyond it the
  invocation is throttled (:class:`Throttled`), never queued.
- ``provisioned`` environments are initialised at start-up with
  ``AWS_LAMBDA_INITIALIZATION_TYPE=provisioned-concurrency``, are never reaped and are
  replaced when they die.
- Idle on-demand environments are reaped after ``idle_timeout_s``.
- A Managed Instances environment takes up to ``free_workers`` invocations at once (its
  workers initialised so far, at most ``processes_per_environment``, less any still running
  an invocation that timed out), so the function's concurrency is environments x processes;
  beyond it the invocation is throttled too, as Lambda Managed Instances "reject new invokes
  to protect invokes that are already in flight" (AWS: Troubleshooting Lambda Managed
  Instances). No environment is started for it beyond
  the environment limit: on AWS new ones come from asynchronous scaling, not from a request.
- Asynchronous (``Event``) invocations wait for capacity instead of being throttled: in a
  queue of futures, each woken when an environment is released (no polling).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from onnx_lambda.emulator.environment import (
    Environment,
    EnvironmentFailed,
    Invocation,
    Outcome,
)
from onnx_lambda.emulator.http_stream import BodyStream
from onnx_lambda.emulator.limits import CpuLimiter
from onnx_lambda.emulator.report import InvocationRecord, billed_ms, start_line
from onnx_lambda.emulator.runtime_launch import function_arn
from onnx_lambda.emulator.template import FunctionSpec

ON_DEMAND = "on-demand"
PROVISIONED = "provisioned-concurrency"


class Throttled(Exception):
    """The function is at its concurrency limit (Lambda's 429 TooManyRequestsException)."""


@dataclass(frozen=True)
class PoolConfig:
    concurrency: int = 4
    idle_timeout_s: float = 600.0
    init_timeout_s: float = 10.0
    enforce_memory: bool = True
    env_overrides: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class InvokeResult:
    """The function's answer: ``payload`` is the response or Lambda's error document."""

    payload: bytes
    error_type: str | None
    record: InvocationRecord
    log: str


class FunctionPool:
    def __init__(self, spec: FunctionSpec, config: PoolConfig, cpu: CpuLimiter,
                 emit: Callable[[str], None]) -> None:
        self.spec = spec
        self.config = config
        self.limit = max(config.concurrency, spec.provisioned)
        self.environments: list[Environment] = []
        self.records: list[InvocationRecord] = []
        self._cpu = cpu
        self._emit = emit
        # invocations (or a start-up) holding each environment; an entry leaves at zero
        self._leased: collections.Counter[Environment] = collections.Counter()
        self._provisioned: set[Environment] = set()
        self._tasks: set[asyncio.Task[object]] = set()  # event invocations, provisioning
        self._closing: set[asyncio.Task[object]] = set()  # environments being closed
        self._reaper: asyncio.Task[None] | None = None
        self._stopping = False
        self._limits: tuple[str, str] | None = None
        # Why the last provisioned environment failed its init (None: none failed, or one has
        # initialised since): what Lambda reports as the alias's provisioned concurrency FAILED.
        self.init_failure: str | None = None
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Initialise the provisioned environments; start the reaper."""
        await asyncio.gather(*(self._provision() for _ in range(self.spec.provisioned)))
        self._reaper = asyncio.create_task(self._reap_idle())

    async def stop(self) -> None:
        self._stopping = True
        for task in [*self._tasks, *([self._reaper] if self._reaper else [])]:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(env.close() for env in self.environments), *self._closing)
        self.environments.clear()

    @property
    def in_use(self) -> int:
        """Environments serving (or initialising for) an invocation right now."""
        return len(self._leased)

    def describe_limits(self) -> tuple[str, str]:
        if self._limits is None:  # fixed for the pool's life; read by every REPORT
            memory = (f"rss-poll {self.spec.memory_mb} MB" if self.config.enforce_memory
                      else "off")
            self._limits = (self._cpu.describe(self.spec.vcpus), memory)
        return self._limits

    # -- invocations -------------------------------------------------------------------
    async def invoke(self, payload: bytes, *, qualifier: str | None = None,
                     version: str = "$LATEST", client_context: str | None = None,
                     on_stream: Callable[[str, BodyStream], None] | None = None,
                     ) -> InvokeResult:
        """Run one synchronous invocation; raises :class:`Throttled` at the limit.
        ``on_stream(content_type, body)``: called when the runtime starts a streaming response
        (the result comes when it has ended); without it a stream is buffered."""
        env = self._acquire()
        try:
            return await self._run(env, payload, qualifier, version, client_context, on_stream)
        finally:
            self._release(env)

    def invoke_event(self, payload: bytes, *, qualifier: str | None = None,
                     version: str = "$LATEST") -> None:
        """Queue an asynchronous invocation: it runs when an environment is free."""

        async def run() -> None:
            queue = self._waiting.append
            while True:
                try:
                    env = self._acquire()
                    break
                except Throttled:
                    waiter = asyncio.get_running_loop().create_future()
                    queue(waiter)
                    queue = self._waiting.appendleft  # beaten to it: stay first in line
                    await waiter  # woken by _release
            try:
                await self._run(env, payload, qualifier, version, None, None)
            finally:
                self._release(env)

        self._spawn(run())

    async def _run(self, env: Environment, payload: bytes, qualifier: str | None,
                   version: str, client_context: str | None,
                   on_stream: Callable[[str, BodyStream], None] | None) -> InvokeResult:
        invocation = Invocation(payload, function_arn(self.spec.name, qualifier),
                                client_context, on_stream=on_stream)
        cold = env.state == "new"
        self._emit(start_line(invocation.request_id, version))
        outcome: Outcome | None = None
        if cold:
            try:
                await env.start()
                await env.wait_ready(self.config.init_timeout_s)
            except EnvironmentFailed as failure:
                outcome = Outcome(failure.payload, failure.error_type, 0.0)
        if outcome is None:
            outcome = await env.invoke(invocation)
        cpu, memory = self.describe_limits()
        init_ms = env.init_ms if cold else None
        record = InvocationRecord(
            function=self.spec.name, request_id=invocation.request_id,
            environment_id=env.id, version=version, cold=cold,
            initialization_type=env.init_type, init_ms=init_ms,
            duration_ms=outcome.duration_ms, billed_ms=billed_ms(outcome.duration_ms, init_ms),
            memory_size_mb=self.spec.memory_mb,
            max_memory_used_mb=min(round(env.max_memory_mb), self.spec.memory_mb)
            if self.config.enforce_memory else round(env.max_memory_mb),
            error_type=outcome.error_type, cpu_limit=cpu, memory_limit=memory)
        self.records.append(record)
        asyncio.get_running_loop().call_soon(self._emit_end, record)  # after the response
        return InvokeResult(outcome.payload, outcome.error_type, record,
                            "\n".join(invocation.log))

    def _emit_end(self, record: InvocationRecord) -> None:
        self._emit(record.end_line())
        self._emit(record.report_line())

    # -- scheduling --------------------------------------------------------------------
    def _acquire(self) -> Environment:
        for env in [e for e in self.environments if e.doomed and e not in self._leased]:
            self._discard(env)  # died or was killed while idle (e.g. from outside)
        free = [env for env in self.environments
                if env.state in ("idle", "busy") and self._leased[env] < env.free_workers]
        if free:
            env = max(free, key=lambda e: (e in self._provisioned, e.last_used))
        elif len(self.environments) < self.limit:
            env = self._new_environment(ON_DEMAND)
        else:
            raise Throttled(self.spec.name)
        self._leased[env] += 1
        return env

    def _release(self, env: Environment) -> None:
        self._leased[env] -= 1
        if self._leased[env] <= 0:
            del self._leased[env]
        if env.doomed and env in self.environments:  # e.g. killed after an oversized
            # response, exit not yet seen (once: a Managed Instances one has several leases)
            self._discard(env)
        while self._waiting:  # capacity for one queued event invocation
            waiter = self._waiting.popleft()
            if not waiter.done():  # (a cancelled one is skipped)
                waiter.set_result(None)
                break

    def _new_environment(self, init_type: str) -> Environment:
        env = Environment(self.spec, init_type=init_type, cpu=self._cpu,
                          enforce_memory=self.config.enforce_memory,
                          env_overrides=self.config.env_overrides,
                          on_log=lambda _env, line: self._emit(line))
        self.environments.append(env)
        return env

    def _discard(self, env: Environment) -> None:
        with contextlib.suppress(ValueError):
            self.environments.remove(env)
        self._spawn(env.close(), self._closing)
        if env in self._provisioned:
            self._provisioned.discard(env)
            if not self._stopping:
                self._spawn(self._provision())

    async def _provision(self) -> None:
        env = self._new_environment(PROVISIONED)
        self._provisioned.add(env)
        self._leased[env] += 1  # not schedulable until ready
        try:
            await env.start()
            await env.wait_ready(self.config.init_timeout_s)
            self.init_failure = None
        except EnvironmentFailed as failure:
            self.init_failure = init_failure_reason(failure)
            self._emit(f"[{self.spec.name}] provisioned environment failed to initialise: "
                       f"{self.init_failure}")
            self._provisioned.discard(env)  # no endless re-provisioning of a broken function
        finally:
            self._release(env)

    def _spawn(self, coro: Coroutine[Any, Any, object],
               tasks: set[asyncio.Task[object]] | None = None) -> None:
        group = self._tasks if tasks is None else tasks
        task = asyncio.ensure_future(coro)
        group.add(task)
        task.add_done_callback(group.discard)

    async def _reap_idle(self) -> None:
        interval = min(1.0, self.config.idle_timeout_s / 4)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for env in list(self.environments):
                if (env.state == "idle" and env not in self._leased
                        and env not in self._provisioned
                        and now - env.last_used > self.config.idle_timeout_s):
                    self._emit(f"[{self.spec.name}] reaping idle environment {env.id[:8]}")
                    self._discard(env)


def init_failure_reason(failure: EnvironmentFailed) -> str:
    """One line: ``Runtime.InitError: ModelLoadError: <message>`` (the stack trace stays in the
    function's log, as on Lambda)."""
    try:
        document = json.loads(failure.payload)
        message = str(document.get("errorMessage") or "").strip()
    except (ValueError, AttributeError):
        message = failure.payload.decode(errors="replace").strip()
    kind = failure.error_type
    reason = f"{kind}: {message}" if message else kind
    return reason if kind.startswith(("Runtime.", "Sandbox.")) else f"Runtime.InitError: {reason}"
