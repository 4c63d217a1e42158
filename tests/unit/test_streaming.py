"""handler.streaming (a buffered answer as a stream, the HTTP integration prelude) and the wire
pieces of handler.stream_runtime and the emulator's stream relay (no sockets here: the loop
itself runs against real Runtime APIs in tests/e2e/test_emulator_streaming.py)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, cast

import pytest

from handler import stream_runtime
from handler.streaming import DELIMITER, StreamedResponse, from_result, prelude
from onnx_lambda.emulator import response_stream


def test_a_function_url_answer_becomes_one_chunk() -> None:
    response = from_result({"statusCode": 404, "headers": {"content-type": "text/plain"},
                            "body": "nope"})
    assert response == StreamedResponse(404, {"content-type": "text/plain"}, (b"nope",))


def test_a_base64_body_is_decoded_and_an_empty_one_is_no_chunk() -> None:
    binary = from_result({"statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(),
                          "isBase64Encoded": True})
    assert list(binary.chunks) == [b"\x00\x01"]
    assert list(from_result({"statusCode": 204}).chunks) == []


def test_anything_else_is_json_with_status_200() -> None:
    response = from_result({"no": "statusCode"})
    assert response.status == 200 and response.headers == {"content-type": "application/json"}
    assert json.loads(b"".join(response.chunks)) == {"no": "statusCode"}


def test_the_prelude_is_json_then_eight_nuls_with_cookies_apart() -> None:
    response = from_result({"statusCode": 201, "headers": {"x-a": "1"}, "body": "",
                            "cookies": ["a=1", "b=2; Path=/"]})
    data = prelude(response)
    assert data.endswith(DELIMITER) and data.count(b"\0") == 8
    assert json.loads(data[:-8]) == {"statusCode": 201, "headers": {"x-a": "1"},
                                     "cookies": ["a=1", "b=2; Path=/"]}


def test_a_chunk_is_framed_as_http_chunked_encoding() -> None:
    assert stream_runtime._chunk(b"hello") == b"5\r\nhello\r\n"
    assert stream_runtime._chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"


def test_an_error_after_the_first_byte_is_two_trailers_with_a_base64_document() -> None:
    try:
        raise KeyError("missing")
    except KeyError as exc:
        raw = stream_runtime._trailers(exc)
    lines = raw.split(b"\r\n")
    assert lines[-1] == b"" and len(lines) == 3
    fields = dict(line.split(b": ", 1) for line in lines[:2])
    assert fields[b"Lambda-Runtime-Function-Error-Type"] == b"KeyError"
    document = json.loads(base64.b64decode(fields[b"Lambda-Runtime-Function-Error-Body"]))
    assert document["errorType"] == "KeyError" and document["errorMessage"] == "'missing'"
    assert document["stackTrace"]


def test_the_context_reads_the_invocation_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "Fn")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
    context = stream_runtime.Context({
        "lambda-runtime-aws-request-id": "req-1",
        "lambda-runtime-invoked-function-arn": "arn:aws:lambda:r:1:function:Fn",
        "lambda-runtime-deadline-ms": "1"})  # long past
    assert context.aws_request_id == "req-1" and context.function_name == "Fn"
    assert context.invoked_function_arn == "arn:aws:lambda:r:1:function:Fn"
    assert context.memory_limit_in_mb == "512"  # a string, as awslambdaric's
    assert context.get_remaining_time_in_millis() == 0


def test_event_frames_read_back_with_botocores_decoder() -> None:
    from botocore.eventstream import EventStreamBuffer

    decoder = EventStreamBuffer()
    decoder.add_data(response_stream.payload_chunk(b"tok0 ")
                     + response_stream.invoke_complete("Boom", "it broke", None))
    chunk, complete = list(decoder)
    assert chunk.headers == {":event-type": "PayloadChunk", ":message-type": "event",
                             ":content-type": "application/octet-stream"}
    assert chunk.payload == b"tok0 "
    assert complete.headers[":event-type"] == "InvokeComplete"
    assert json.loads(complete.payload) == {"ErrorCode": "Boom", "ErrorDetails": "it broke"}


async def _chunks(*pieces: bytes) -> Any:
    for piece in pieces:
        yield piece


def test_the_prelude_may_arrive_in_pieces() -> None:
    document, rest = asyncio.run(response_stream.read_prelude(
        _chunks(b'{"statusCode": 2', b'01}\0\0\0', b"\0\0\0\0\0body")))
    assert document == {"statusCode": 201} and rest == b"body"
    assert response_stream.prelude_head({"statusCode": 201, "headers": {"a": "b"},
                                         "cookies": ["c=1"]}) == (
        201, [("a", "b"), ("Set-Cookie", "c=1")])


@pytest.mark.parametrize("pieces", [(b"{}",), (b"[1]" + DELIMITER,), (b"not json" + DELIMITER,),
                                    (b"x" * (response_stream.MAX_PRELUDE_BYTES + 1),)])
def test_a_missing_or_bad_prelude_is_refused(pieces: tuple[bytes, ...]) -> None:
    with pytest.raises(response_stream.BadPrelude):
        asyncio.run(response_stream.read_prelude(_chunks(*pieces)))


def test_a_body_stream_hands_over_pieces_pauses_its_sender_and_reports_a_cut() -> None:
    from onnx_lambda.emulator.http_stream import HIGH_WATER, BodyStream, StreamBroken

    calls: list[str] = []

    async def run() -> tuple[list[bytes], bool]:
        body = BodyStream(lambda: calls.append("abort"), lambda: calls.append("pause"),
                          lambda: calls.append("resume"))
        body.feed(b"a" * (HIGH_WATER + 1))  # more than it buffers: the sender pauses
        assert calls == ["pause"]
        reader = aiter(body)
        got = [await anext(reader)]  # drained below half: the sender resumes
        assert calls == ["pause", "resume"]
        body.feed(b"b")
        body.fail()  # the sender went away
        got.append(await anext(reader))
        with pytest.raises(StreamBroken):
            await anext(reader)
        body.abort()  # ended: nothing left to abort
        return got, body.ended.result()

    got, complete = asyncio.run(run())
    assert [len(piece) for piece in got] == [HIGH_WATER + 1, 1] and complete is False
    assert "abort" not in calls


def test_an_abandoned_body_stream_drops_its_sender_only_when_more_comes() -> None:
    """A reader gone before the end: the sender's next bytes drop it (truncated), but a stream
    whose end comes next is complete (a client that stops at its last event cut nothing)."""
    from onnx_lambda.emulator.http_stream import BodyStream

    async def run(then: str) -> tuple[list[str], bool]:
        calls: list[str] = []
        body = BodyStream(lambda: calls.append("abort"), lambda: None, lambda: None)
        body.abandon()
        assert calls == []
        if then == "more":
            body.feed(b"next token")
        body.finish({})  # (a terminator parsed after the dropped bytes changes nothing)
        return calls, body.ended.result()

    assert asyncio.run(run("end")) == ([], True)
    assert asyncio.run(run("more")) == (["abort"], False)

    async def unread() -> list[str]:
        calls: list[str] = []
        body = BodyStream(lambda: calls.append("abort"), lambda: None, lambda: None)
        body.feed(b"never relayed")
        body.abandon()  # bytes the caller never got: dropped now
        return calls

    assert asyncio.run(unread()) == ["abort"]


def test_the_relay_holds_lambdas_pace_past_the_burst_and_cuts_at_the_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Uncapped for the burst, then at most the rate (the delays asked of the loop, no clock
    read here), and cut off past the limit with the sender's connection dropped."""
    monkeypatch.setattr(response_stream, "LAMBDA_STREAM_BURST_BYTES", 10)
    monkeypatch.setattr(response_stream, "LAMBDA_STREAM_BYTES_PER_S", 100)
    monkeypatch.setattr(response_stream, "LAMBDA_STREAM_RESPONSE_BYTES", 60)
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    aborted: list[bool] = []

    class Body:
        def abort(self) -> None:
            aborted.append(True)

    async def run() -> list[bytes]:
        monkeypatch.setattr(asyncio, "sleep", sleep)
        got: list[bytes] = []
        with pytest.raises(response_stream.StreamTooLarge):
            async for data in response_stream.capped(
                    _chunks(*[b"x" * 10] * 7), cast(Any, Body())):
                got.append(data)
        return got

    got = asyncio.run(run())
    assert len(got) == 6 and aborted == [True]  # 60 bytes went, the 7th chunk passed 60
    # the sleeps take no time here: each chunk past the burst waits for all it is owed,
    # (bytes past the burst) / rate since the cap began (a test's run takes well under 0.1 s)
    assert slept == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5], abs=0.05)


def test_a_caller_that_leaves_after_the_last_byte_leaves_the_invocation_running() -> None:
    """OpenAI's SDK closes at ``[DONE]``: the relay, which then waits for the invocation's
    outcome, is cancelled. The invocation must not be cancelled with it (its record, END and
    REPORT would never come): it ends on its own."""
    from onnx_lambda.emulator.http_stream import BodyStream

    async def run() -> list[str]:
        outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        ended: list[str] = []
        body = BodyStream(lambda: None, lambda: None, lambda: None)
        body.feed(b"data: [DONE]\n\n")
        body.finish({})

        async def invoke(on_stream: Any) -> Any:
            on_stream("text/event-stream", body)
            try:  # (the runtime's stream has ended; its result is on its way)
                ended.append(await outcome)
            except asyncio.CancelledError:
                ended.append("cancelled")
                raise

        started, done = await response_stream.invoke_streaming(invoke)
        assert started is not None
        relayed: list[bytes] = []

        async def caller() -> None:
            async for data in response_stream.relay(b"", aiter(body), body, done):
                relayed.append(data)

        task = asyncio.ensure_future(caller())
        for _ in range(20):  # the last byte relayed, the relay waits for the outcome
            await asyncio.sleep(0)
        assert relayed == [b"data: [DONE]\n\n"] and not task.done()
        task.cancel()  # the caller went away
        await asyncio.gather(task, return_exceptions=True)
        outcome.set_result("recorded")
        for _ in range(5):
            await asyncio.sleep(0)
        return ended

    assert asyncio.run(run()) == ["recorded"]
