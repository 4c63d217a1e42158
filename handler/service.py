"""The per-request path: event → source → route → decode → run → encode → source shape.

``Service`` holds what init built (model, pipeline, telemetry) and is called once per
invocation. It never raises for a bad request: every failure becomes an error response with
the request id, and the environment stays warm and clean for the next request.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict, deque

# codecs.npy loads on first use (codecs.__getattr__); a route's module on its first request
# (handler.routes), but /predict's, which every model serves, is imported here
from handler import codecs, ping, routes, sources, tensors
from handler.api import predict  # noqa: F401
from handler.api.served import Served
from handler.environment import EnvironmentState
from handler.errors import (
    DeadlineExceededError,
    OnnxLambdaError,
    PayloadTooLargeError,
    ResponseTooLargeError,
)
from handler.http import Request, Response
from handler.model import Model, first_line
from handler.pipelines import Pipeline
from handler.settings import LAMBDA_MAX_SYNC_PAYLOAD, Settings
from handler.telemetry import StageTimer, Telemetry, now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.streaming import StreamedResponse

MAX_QUEUE_MS = 30_000
RESPONSE_ENVELOPE = 16 * 1024  # status, headers and JSON quoting around the body
RECENT_RUNS = 32  # inference times the deadline check looks at
# Event sources whose gateway turns a base64 body back into binary for any content type
# (``handler.compression`` says why REST APIs are not among them).
GZIP_SOURCES = frozenset({"http-api", "function-url", "alb"})
# a body this size fits the response limit even base64-encoded (4 bytes per 3, and padding)
FITS_EVEN_IN_BASE64 = (LAMBDA_MAX_SYNC_PAYLOAD - RESPONSE_ENVELOPE - 4) * 3 // 4


class Service:
    def __init__(self, settings: Settings, model: Model, pipeline: Pipeline,
                 telemetry: Telemetry, init_durations: dict[str, float]) -> None:
        self.settings = settings
        self.model = model
        self.pipeline = pipeline
        self.telemetry = telemetry
        self.init_durations = init_durations
        self.state = EnvironmentState(settings.initialization_type)
        self.served = Served(settings, model, pipeline, telemetry, self.state)  # what routes see
        self._recent_inference_ms: deque[float] = deque(maxlen=RECENT_RUNS)
        self._slowest_ms = 0.0  # at least max(_recent_inference_ms): see _dispatch
        self._cache: OrderedDict[bytes, Response] = OrderedDict()

    # -- entry ---------------------------------------------------------------------------

    def stream(self, event: Any, context: Any) -> StreamedResponse:
        """Response-streaming mode: the answer as one chunk, or a streamed answer's chunks
        (a generation's server-sent events) as they come."""
        from handler import streaming  # response-streaming mode only

        result = self(event, context, True)  # (never raises: every failure is an answer)
        if isinstance(result, streaming.StreamedResponse):
            return result
        return streaming.from_result(result)

    def __call__(self, event: Any, context: Any, streamed: bool = False) -> Any:
        """The answer to one invocation in its event source's shape; ``streamed``: the
        transport sends a streamed answer's chunks as they come (``stream``)."""
        request_id = getattr(context, "aws_request_id", None)
        if not isinstance(request_id, str) or not request_id:
            request_id = str(request_id or os.urandom(16).hex())
        try:
            if ping.is_ping(event):
                return self._ping(event)
            return self._handle(event, context, request_id, streamed)
        except Exception as exc:  # outside the request's guard (telemetry, a custom source)
            return self._last_resort(event, request_id, exc)

    def _handle(self, event: Any, context: Any, request_id: str, streamed: bool) -> Any:
        timer = StageTimer()
        state = self.state
        cold = False if state.invoked else state.first_invocation()
        state.requests_served += 1
        source: sources.EventSource = sources.DIRECT
        request: Request | None = None
        error_type: str | None = None
        try:
            source = sources.detect(event)
            request = source.to_request(event)
            request.streamed = streamed
            if request.received_epoch_ms is not None:
                self._queue_time(request.received_epoch_ms, timer.start, timer.durations)
            response = self._dispatch(request, context, timer)
            if response.chunks is not None and not streamed:  # one body, as buffered
                response.body, response.chunks = b"".join(response.chunks), None
            response = self._fit(response, request_id, request, source)
        except OnnxLambdaError as exc:
            response = self._error_answer(exc, request_id, request)
            error_type = exc.type
        except Exception as exc:  # a bug or a user pipeline's failure: log it, answer 500
            import traceback  # rare path: keep its import off the cold start

            self.telemetry.log("error", "unhandled error", requestId=request_id,
                               error=repr(exc), traceback=traceback.format_exc())
            response = self._error_answer(
                OnnxLambdaError("internal error; see the function's logs"), request_id, request)
            error_type = "InternalError"
        durations = timer.close("encode")
        took = durations.get("inference")
        if took is not None:  # the deadline check's window (_dispatch)
            self._recent_inference_ms.append(took)
            self._slowest_ms = max(self._slowest_ms, took)
        if cold:
            durations.update(self.init_durations)
        timing = self.telemetry.request(
            durations, request_id=request_id, cold=cold, source=source.name,
            method=None if request is None else request.method,
            path=None if request is None else request.path, status=response.status,
            error_type=error_type, non_finite=response.non_finite)
        response.headers["server-timing"] = timing
        response.headers["x-request-id"] = request_id
        shaped = source.to_response(response, event)
        if response.chunks is None:
            return shaped
        from handler import streaming  # response-streaming mode only

        return streaming.from_result(shaped)._replace(chunks=response.chunks)

    def _last_resort(self, event: Any, request_id: str, exc: Exception) -> Any:
        """A 500 in the event's own shape when even the error path failed: never a raised
        exception, whose ``stackTrace`` (file paths) Lambda would hand to the caller."""
        import contextlib  # rare path (both): keep their imports off the cold start
        import traceback

        response = Response(500, headers={"x-request-id": request_id}, payload={
            "error": {"type": "InternalError", "message": "internal error; see the function's "
                      "logs"}, "requestId": request_id})
        with contextlib.suppress(Exception):  # a broken log stream must not cost the answer
            self.telemetry.log("error", "unhandled error", requestId=request_id,
                               error=repr(exc), traceback=traceback.format_exc())
        try:
            return sources.detect(event).to_response(response, event)
        except Exception:  # a custom source failed too: the direct shape cannot
            return response.payload

    @staticmethod
    def _queue_time(received_epoch_ms: float, started: float,
                    durations: dict[str, float]) -> None:
        queue = time.time() * 1000.0 - received_epoch_ms - (now() - started) * 1000.0
        # Beyond API Gateway's 30 s integration limit the timestamp is a replayed or sample
        # event's, not this request's: no queue figure rather than an absurd one.
        if queue <= MAX_QUEUE_MS:
            durations["queue"] = max(queue, 0.0)  # clock skew can read negative

    # -- routing -------------------------------------------------------------------------

    def _dispatch(self, request: Request, context: Any, timer: StageTimer) -> Response:
        if self.settings.api_keys and not request.raw_response:
            from handler import api_keys  # only when keys are set (hmac loads OpenSSL)

            api_keys.check(self.settings.api_keys, request.headers.get("authorization"))
        route, params = routes.TABLE.match(request.method, request.path)
        served = self.served
        if route.needs is not None and route.needs not in served.capabilities:
            raise route.family.refusal(served, route)
        if request.method == "POST":  # every body: the size limit and the deadline's check
            self._check_limits(request, context)
        run = route.run or route.load()
        cache_size = self.settings.cache_size
        key = self._cache_key(request) if cache_size and route.cached else None
        if key is None:
            return run(served, request, params, timer, context)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            timer.mark("cache")
            return cached.copy()
        response = run(served, request, params, timer, context)
        response.body_bytes()
        self._cache[key] = response.copy()
        if len(self._cache) > cache_size:
            self._cache.popitem(last=False)
        return response

    # -- checks --------------------------------------------------------------------------

    def _check_limits(self, request: Request, context: Any) -> None:
        """The body's size (inflated, when coded) and the time left for an inference."""
        settings = self.settings
        if len(request.body) > settings.max_payload_bytes:
            raise PayloadTooLargeError(f"request body is {len(request.body)} bytes; the "
                                       f"limit is {settings.max_payload_bytes}")
        coded = request.headers.get("content-encoding")
        if coded is not None:
            from handler import compression  # coded bodies only (zlib: see compression)

            request.body = compression.inflate(request.body, coded, settings.max_payload_bytes)
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        recent = self._recent_inference_ms
        if remaining is not None and recent:
            margin = settings.deadline_margin_ms
            left = remaining()
            # _slowest_ms bounds the window's slowest run from above; only a request that this
            # bound cannot clear looks at the window itself (max() of 32 floats: 6 K
            # instructions, ~5 % of the tiny model's warm overhead; callgrind, Python 3.11)
            if left < self._slowest_ms + margin:
                self._slowest_ms = slowest = max(recent)
                needed = slowest + margin
                if left < needed:
                    raise DeadlineExceededError(f"{left} ms left in this invocation; "
                                                f"inference needs about {needed:.0f} ms")

    def _cache_key(self, request: Request) -> bytes | None:
        if request.raw_response:
            return None
        import hashlib  # only when the cache is on: OpenSSL's load stays off the cold start

        digest = hashlib.blake2b(request.body, digest_size=16)
        for part in (request.path, request.content_type, request.headers.get("accept", ""),
                     request.headers.get(codecs.v2.HEADER_LENGTH, ""),
                     request.query.get("output", "")):
            digest.update(b"\0" + part.encode())
        return digest.digest()

    # -- answers -------------------------------------------------------------------------

    def _ping(self, event: dict[str, Any]) -> dict[str, Any]:
        cold = self.state.first_invocation()
        started = time.perf_counter()
        self.warm_up()
        inference_ms = (time.perf_counter() - started) * 1000.0
        held = ping.hold_ms(event)
        if held:
            time.sleep(held / 1000.0)
        answer = self.state.answer(cold=cold, inference_ms=inference_ms, held_ms=held)
        self.telemetry.log("info", "warm-up ping", **answer)
        return answer

    def _recorded_example(self) -> Any:
        """The manifest's inline example when it was written for this pipeline, else None."""
        manifest = self.model.artifact.manifest
        if (manifest is not None and manifest.example is not None
                and manifest.pipeline == self.pipeline.name):
            return manifest.example
        return None

    def example_inputs(self) -> Any:
        """A valid ``inputs`` value: the manifest's example when it was written for this
        pipeline, else the pipeline's own synthetic input."""
        recorded = self._recorded_example()
        return self.pipeline.example() if recorded is None else recorded

    @property
    def warmup_status(self) -> str:
        """"off", "ok", or "failed: <why>" when a guessed example did not run."""
        return self.state.warmup

    @warmup_status.setter
    def warmup_status(self, status: str) -> None:
        self.state.warmup = status

    _example_feeds: dict[str, Any] | None = None  # the manifest's example_file, once read

    def warm_up(self) -> None:
        """One real inference: on the manifest's example (``example_file``, else ``example``
        when written for this pipeline), which must run (it raises); else on the pipeline's
        synthetic guess, whose failure is logged and shown in ``/health`` but never stops the
        environment (real requests decide), and which is not tried again."""
        if self.warmup_status.startswith("failed"):
            return
        manifest = self.model.artifact.manifest
        if manifest is not None and manifest.example_file:
            if self._example_feeds is None:  # read once: warmer pings run it again
                self._example_feeds = self._example_file(manifest.example_file)
            self.model.run(self._example_feeds)
            self.warmup_status = "ok"
            return
        try:
            self.model.run(self.pipeline.preprocess(self.example_inputs(), {}))
        except Exception as exc:
            if self._recorded_example() is not None:
                raise
            first = first_line(exc)
            self.warmup_status = f"failed: {first}"
            self.telemetry.log("warning", "warm-up on a synthetic input failed; serving anyway "
                               "(build the model with an example to warm it up)", error=first)
            return
        self.warmup_status = "ok"

    def _example_file(self, name: str) -> dict[str, Any]:
        arrays = codecs.npy.load_npz(self.model.artifact.file(name))  # data, never code
        return tensors.check(arrays, self.model.inputs)

    def _fit(self, response: Response, request_id: str, request: Request,
             source: sources.EventSource) -> Response:
        """Encode the body, gzip a large JSON one when the client accepts it; one that cannot
        fit Lambda's response limit becomes a clear error instead of the runtime's opaque
        failure (API Gateway would answer 502)."""
        size = len(response.body_bytes())
        gzip_from = self.settings.gzip_min_bytes
        if (gzip_from and size >= gzip_from and source.name in GZIP_SOURCES
                and not response.is_binary):
            from handler import compression  # large answers only: zlib stays off the cold start

            compression.negotiate(response, request.headers.get("accept-encoding"))
            size = len(response.body_bytes())
        if size <= FITS_EVEN_IN_BASE64:  # the usual answer: no look at its type
            return response
        wire = size * 4 // 3 + 4 if response.sent_in_base64 else size  # base64 on the way
        if wire <= LAMBDA_MAX_SYNC_PAYLOAD - RESPONSE_ENVELOPE:
            return response
        error = self._error_answer(ResponseTooLargeError(
            f"the response would be {wire} bytes; Lambda returns at most "
            f"{LAMBDA_MAX_SYNC_PAYLOAD}: ask for fewer outputs (parameters.outputs), binary "
            "tensors (V2 binary_data, .npy) or a smaller batch"), request_id, request)
        error.body_bytes()
        return error

    def _error_answer(self, exc: OnnxLambdaError, request_id: str,
                      request: Request | None = None) -> Response:
        if exc.status >= 500:
            self.telemetry.log("error", exc.message, requestId=request_id, errorType=exc.type,
                               cause=repr(exc.__cause__) if exc.__cause__ else None)
        family = routes.OURS if request is None else routes.TABLE.family(request.path)
        return family.error(exc, request_id)
