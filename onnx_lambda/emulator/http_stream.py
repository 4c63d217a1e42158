"""Streamed bodies for :mod:`.http11`: a request body read as it arrives, a response body written
as it is produced.

- :class:`BodyStream`: a request whose body the server hands to its handler before the body
  has ended (the server's ``streams_body(path, headers)`` says which: the Runtime API's
  streaming ``/response``). The connection feeds it, ends it with the chunked body's trailers,
  or fails it when the sender goes away; the reader iterates it (``async for``) and may
  :meth:`~BodyStream.abort` the sender's connection (its own caller went away). Reading
  pauses while more than ``HIGH_WATER`` bytes wait for the reader.
- A :class:`~.http_types.Response` with ``stream`` (an async iterator of bytes) is sent with
  ``Transfer-Encoding: chunked``, each piece as one chunk as soon as it comes. An exception
  from the iterator aborts the connection (the client sees a cut-off body, never a complete
  one); a client that goes away closes the iterator (``aclose``), so its producer can stop.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable

HIGH_WATER = 1 << 20  # bytes a stream buffers before reading from its sender pauses


class StreamBroken(Exception):
    """The sender's connection ended before the body did."""


class BodyStream:
    """A request body on its way from the connection to the handler."""

    def __init__(self, abort: Callable[[], None], pause: Callable[[], None],
                 resume: Callable[[], None]) -> None:
        self._abort, self._pause, self._resume = abort, pause, resume
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._abort_on_more = False  # abandoned: the next byte from the sender drops it
        self.trailers: dict[str, str] = {}
        self.size = 0  # bytes received so far
        # set when the body has ended: True complete, False cut off (sender gone)
        self.ended: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    # -- the connection's side ------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if self._abort_on_more:
            self.fail()  # (first: a terminator parsed after it does not make it complete)
            self._abort()
            return
        self.size += len(data)
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > HIGH_WATER:
            self._pause()
        self._wake()

    def finish(self, trailers: dict[str, str]) -> None:
        self.trailers = trailers
        self._end(True)

    def fail(self) -> None:
        self._end(False)

    # -- the reader's side -----------------------------------------------------------------
    def abort(self) -> None:
        """Drop the sender's connection (nobody reads the rest)."""
        if not self.ended.done():
            self._abort()

    def abandon(self) -> None:
        """Nobody reads the rest: drop the sender's connection as soon as it sends more. A
        stream whose end comes next stays complete (a client that stops reading after the
        last event it wanted, as OpenAI's SDK does at ``[DONE]``, truncated nothing)."""
        if self._chunks:
            self.abort()
        elif not self.ended.done():
            self._abort_on_more = True

    async def read_all(self) -> bytes:
        return b"".join([chunk async for chunk in self])

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            while self._chunks:
                data = self._chunks.popleft()
                self._buffered -= len(data)
                if self._buffered <= HIGH_WATER // 2:
                    self._resume()
                yield data
            if self.ended.done():
                if not self.ended.result():
                    raise StreamBroken("the sender went away mid-body")
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter

    def _end(self, complete: bool) -> None:
        if not self.ended.done():
            self.ended.set_result(complete)
            self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
