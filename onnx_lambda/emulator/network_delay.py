"""``serve --network-delay MS``: the emulator's front as a caller MS milliseconds away (one way).

Each request is held MS before its handler sees it (so API Gateway's request time, and with it
the function's queue figure, starts when the request "arrives") and its response MS before it
is written: one request-response exchange costs 2 × MS more, as a round trip would. Requests
are delayed independently (latency, not bandwidth: concurrent requests overlap).

Not modelled (docs/explanation/emulator.md says so too): the TCP and TLS handshakes (the kernel
answers the SYN and the TLS records flow at loopback speed, so a new connection costs 2–3 round
trips less than it would), a response larger than one congestion window (~14.6 KB after slow
start's initial 10 segments: each further window is another round trip on a real path), loss,
jitter, and the refusals the front answers itself (over-limit heads and bodies).
"""

from __future__ import annotations

import asyncio
import inspect

from onnx_lambda.emulator.http_types import Handler, Request, Response


def delayed(handler: Handler, one_way_ms: float) -> Handler:
    """``handler`` behind ``one_way_ms`` each way (0: ``handler`` itself)."""
    if not one_way_ms:
        return handler
    one_way_s = one_way_ms / 1e3

    async def far(request: Request) -> Response:
        await asyncio.sleep(one_way_s)  # the request on its way in
        answer = handler(request)
        response = await answer if inspect.isawaitable(answer) else answer
        await asyncio.sleep(one_way_s)  # the response's head on its way out
        return response

    return far
