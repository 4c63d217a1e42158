"""OpenAI's text generation API over a generative model (the ``generate`` pipeline):
``POST /v1/chat/completions`` and ``POST /v1/completions``, so that the ``openai`` SDK and the
tools built on it talk to the function unmodified (docs/reference/openai-generation.md).

Imported on the first such request only (its route in ``handler.routes``).
``"stream": false`` answers one JSON object; ``"stream": true`` answers server-sent events in
OpenAI's chunk format ending with ``data: [DONE]``, as a ``Response`` whose ``chunks`` the
transport sends live, one write per token, in Lambda's response-streaming mode
(``Service.stream``), or joins into one ``text/event-stream`` body elsewhere (API Gateway,
``awslambdaric``), which OpenAI's clients parse the same way.

The first token is generated before the answer's status is chosen: a deadline that leaves no
time for it is a 504, a prompt the pipeline refuses a 400, and the ``Server-Timing`` header
carries ``ttft`` even when the rest streams. The deadline during generation ends it cleanly
with ``finish_reason: "length"`` (``handler.generation.deadline``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator, Iterator
from itertools import chain

from handler.api.openai import chat_fields
from handler.api.openai.errors import body_of, error, model_named
from handler.errors import (
    DeadlineExceededError,
    FieldError,
    InvalidInputError,
    OnnxLambdaError,
)
from handler.generation.deadline import Deadline
from handler.http import Response
from handler.telemetry import now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.generation.params import GenerationParams, Step
    from handler.http import Request
    from handler.telemetry import StageTimer

SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
DONE = b"data: [DONE]\n\n"
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # UTF-8 text as is


def chat(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
         context: Any) -> Response:
    """``POST /v1/chat/completions`` (a model that declares ``chat``: a chat template)."""
    return _answer(served, request, timer, context, True)


def completions(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
                context: Any) -> Response:
    """``POST /v1/completions`` (a model that declares ``generate``)."""
    return _answer(served, request, timer, context, False)


def _answer(served: Served, request: Request, timer: StageTimer, context: Any,
            chat: bool) -> Response:
    where = "messages" if chat else "prompt"
    body = body_of(request, chat_fields.CHAT_FIELDS if chat else chat_fields.COMPLETION_FIELDS,
                   f"'model' and '{where}'")
    chat_fields.check_fields(body, chat)
    model = model_named(served, body.get("model"))
    stream, include_usage = chat_fields.streaming(body)
    limit, limit_name = chat_fields.max_tokens(body)
    pipeline: Any = served.pipeline  # the Generation interface: the route needs generate
    asked = (chat_fields.messages(body.get("messages")) if chat
             else chat_fields.prompt(body.get("prompt")))
    try:  # the pipeline's refusals (a message its chat template rejects) name the field
        prompt_ids: list[int] = pipeline.encode(pipeline.render_chat(asked) if chat else asked)
    except InvalidInputError as exc:
        raise _at(exc, where) from None
    room = pipeline.context_length - len(prompt_ids)
    if room < 1 or (limit is not None and limit > room):
        wanted = "" if limit is None else f" and {limit} to generate"
        raise FieldError(f"this model's context is {pipeline.context_length} tokens; the "
                         f"{where} takes {len(prompt_ids)}{wanted}: shorten the {where}"
                         f"{'' if limit is None else f' or lower {limit_name!r}'}",
                         where if room < 1 or limit is None else limit_name,
                         "context_length_exceeded")
    sampling = chat_fields.params(body, room if limit is None else limit)
    timer.mark("decode")
    run = Run(pipeline, prompt_ids, sampling,
              Deadline(context, served.settings.deadline_margin_ms), timer, where)
    steps = iter(run)
    first = next(steps)
    answer = Answer(chat, model, getattr(context, "aws_request_id", None), include_usage)
    if not stream:
        text = "".join([first.text, *(step.text for step in steps)])
        run.record(timer)
        return Response(200, payload=answer.whole(text, run))
    events = answer.events(first, steps, run)
    if not request.streamed:  # buffered: the transport joins the events into one body
        return Response(200, headers=dict(SSE_HEADERS), chunks=_buffered(events, run, timer))
    timer.mark("prefill")  # (the request's line goes out now: its generation follows the stream)
    return Response(200, body=b"", headers=dict(SSE_HEADERS),
                    chunks=_live(events, steps, run, served, answer.id))


def _buffered(events: Iterator[bytes], run: Run, timer: StageTimer) -> Iterator[bytes]:
    """The events for a buffered transport, which joins them before the request's line is
    written: the generation's figures go into that line, and a failure is the answer."""
    yield from events
    run.record(timer)


def _at(exc: InvalidInputError, param: str) -> FieldError:
    """The pipeline's refusal of the prompt, naming the field at fault."""
    return FieldError(exc.message, param)


class Run:
    """One request's generation: iterating it yields the pipeline's steps, the first at once
    (a deadline already too near is a 504); the pipeline's generator is closed when the
    iteration ends, however it ends (the KV cache is freed)."""

    slowest_prefill_ms = 0.0  # in this environment: what a request's first token needs

    def __init__(self, pipeline: Any, prompt_ids: list[int], params: GenerationParams,
                 deadline: Deadline, timer: StageTimer, where: str) -> None:
        self.prompt_tokens = len(prompt_ids)
        self.completion_tokens = 0
        self.finish_reason = "stop"
        self._pipeline, self._ids, self._params = pipeline, prompt_ids, params
        self._deadline, self._timer, self._where = deadline, timer, where
        self.started_at = self.first_at = self.last_at = 0.0

    def __iter__(self) -> Generator[Step]:
        deadline = self._deadline
        if not deadline.allows(Run.slowest_prefill_ms):
            raise DeadlineExceededError(
                "too little time left in this invocation for the first token (the slowest "
                f"prompt here took {Run.slowest_prefill_ms:.0f} ms to it)")
        self.started_at = now()
        try:
            generator = self._pipeline.generate(self._ids, self._params, deadline)
        except InvalidInputError as exc:
            raise _at(exc, self._where) from None
        try:
            step = next(generator)  # (a generator ending without a finish reason: a bug, 500)
            if not step.token_ids and step.finish_reason == "length" and deadline.expired:
                raise DeadlineExceededError("the invocation's deadline came before the first "
                                            "token")
            self.first_at = now()
            deadline.decoding()
            self._timer.durations["ttft"] = (self.first_at - self._timer.start) * 1000.0
            self._timer.durations.update(deadline.timings)  # the generation's own (prefix-hit)
            Run.slowest_prefill_ms = max(Run.slowest_prefill_ms,
                                         (self.first_at - self.started_at) * 1000.0)
            while True:
                self.completion_tokens += len(step.token_ids)
                self.last_at = now()
                yield step
                if step.finish_reason is not None:
                    self.finish_reason = step.finish_reason
                    return
                step = next(generator)
        except InvalidInputError as exc:
            if self.first_at:  # a refusal after the first token: as the pipeline said it
                raise
            raise _at(exc, self._where) from None
        finally:
            generator.close()

    @property
    def tokens_per_s(self) -> float | None:
        """The pace after the first token: tokens after it over the time they took."""
        took = self.last_at - self.first_at
        return (self.completion_tokens - 1) / took if self.completion_tokens > 1 and took else None

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}

    def record(self, timer: StageTimer) -> None:
        """The whole generation as the ``generate`` stage, and its pace."""
        timer.mark("generate")
        rate = self.tokens_per_s
        if rate is not None:
            timer.durations["tokens-per-s"] = rate


class Answer:
    """One request's answer in OpenAI's shapes: ``chat.completion`` or ``text_completion``,
    and their streamed chunks."""

    def __init__(self, chat: bool, model: str, request_id: Any, include_usage: bool) -> None:
        self.chat, self.model, self.include_usage = chat, model, include_usage
        suffix = (request_id if isinstance(request_id, str) and request_id
                  else os.urandom(12).hex())
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-{suffix}"
        self.created = int(time.time())
        self._chunk_object = "chat.completion.chunk" if chat else "text_completion"

    def whole(self, text: str, run: Run) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text, "refusal": None}
        else:
            choice["text"] = text
        choice["logprobs"] = None
        choice["finish_reason"] = run.finish_reason
        return {"id": self.id, "object": "chat.completion" if self.chat else "text_completion",
                "created": self.created, "model": self.model, "choices": [choice],
                "usage": run.usage()}

    def events(self, first: Step, steps: Iterator[Step], run: Run) -> Iterator[bytes]:
        """Every event of the stream: the role (chat), a chunk per step that adds text, the
        finish reason, the usage when asked for, ``[DONE]``."""
        if self.chat:
            yield self._chunk({"role": "assistant", "content": ""}, None)
        for step in chain((first,), steps):
            if step.text:
                yield self._chunk({"content": step.text} if self.chat else step.text, None)
            if step.finish_reason is not None:
                yield self._chunk({} if self.chat else "", step.finish_reason)
        if self.include_usage:
            yield self._event({**self._base(), "choices": [], "usage": run.usage()})
        yield DONE

    def _chunk(self, delta: Any, finish_reason: str | None) -> bytes:
        choice = ({"index": 0, "delta": delta} if self.chat else {"index": 0, "text": delta})
        choice["logprobs"] = None
        choice["finish_reason"] = finish_reason
        chunk = {**self._base(), "choices": [choice]}
        if self.include_usage:  # OpenAI's: null on every chunk but the last
            chunk["usage"] = None
        return self._event(chunk)

    def _base(self) -> dict[str, Any]:
        return {"id": self.id, "object": self._chunk_object, "created": self.created,
                "model": self.model}

    @staticmethod
    def _event(data: dict[str, Any]) -> bytes:
        return b"data: %s\n\n" % _ENCODER.encode(data).encode()


def _live(events: Iterator[bytes], steps: Generator[Step], run: Run, served: Served,
          answer_id: str) -> Iterator[bytes]:
    """The events as they are generated (response-streaming mode). A failure after the first
    byte is an ``error`` event, as OpenAI's API sends one (its SDK raises ``APIError``); the
    generation's figures go out as one metrics line when the stream ends, however it ends."""
    try:
        yield from events
    except Exception as exc:  # the status is sent already: the error becomes an event
        import traceback  # rare path: keep its import off the cold start

        served.telemetry.log("error", "generation failed mid-stream", id=answer_id,
                              error=repr(exc), traceback=traceback.format_exc())
        known = exc if isinstance(exc, OnnxLambdaError) else OnnxLambdaError(
            "internal error; see the function's logs")
        yield Answer._event(error(known, {}).payload)
    finally:
        steps.close()  # (a closed stream: the pipeline's generator closes, its cache freed)
        figures = {"generate": (run.last_at - run.started_at) * 1000.0}
        rate = run.tokens_per_s
        if rate is not None:
            figures["tokens-per-s"] = rate
        served.telemetry.figures("stream finished", figures, id=answer_id,
                                  finishReason=run.finish_reason,
                                  promptTokens=run.prompt_tokens,
                                  completionTokens=run.completion_tokens)
