"""HTTP content codings: gzip for large JSON answers when the client asks for it (RFC 9110
§12.5.3 Accept-Encoding), and gzip or deflate request bodies undone (§8.4 Content-Encoding, as
``tritonclient``'s ``request_compression_algorithm`` sends them), bounded like any body.

API Gateway HTTP APIs compress nothing themselves; they, Function URLs and ALB pass a base64
body from the function on as binary, with the function's ``Content-Encoding``. REST APIs are
left out: they compress on their own (``minimumCompressionSize``), and decode a base64 body only
for the API's configured ``binaryMediaTypes``, so a gzip body could reach the client as base64.

Shortest float32 JSON of an embedding compresses to about 0.45× at zlib's level 1, in about a
quarter of the time level 6 takes for 0.41× (``python -m benchmarks.json_floats``).
Imported by the first large answer or coded request only: ``zlib`` stays off the cold start.
"""

from __future__ import annotations

import zlib

from handler.errors import BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError
from handler.http import Response

LEVEL = 1
GZIP_WBITS = 31  # zlib's wbits for the gzip container (16 + a 32 KiB window)
GZIP = "gzip"
# A coding → zlib's wbits for its container. "deflate" is the zlib format (RFC 9110 §8.4.1.2);
# some clients send bare deflate data under that name, tried when the zlib header is missing.
WBITS = {"gzip": GZIP_WBITS, "x-gzip": GZIP_WBITS, "deflate": 15}
BARE_DEFLATE = -15
MAX_CODINGS = 2  # each may expand the body up to the limit: a list of 1,000 must not cost 1,000


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip: ``gzip`` (or its alias ``x-gzip``)
    listed with a weight above 0, or not listed and ``*`` is. A malformed element is skipped,
    not an error: the header states a preference, and identity is always a valid answer."""
    star = None
    for element in header.lower().split(","):
        coding, _, params = element.partition(";")
        coding = coding.strip()
        if coding in ("gzip", "x-gzip"):
            weight = _weight(params)
            if weight is not None:
                return weight > 0
        elif coding == "*":
            star = _weight(params)
    return star is not None and star > 0


def _weight(params: str) -> float | None:
    """The ``q`` of an element's parameters (1 when absent); None when it is malformed."""
    params = params.strip()
    if not params:
        return 1.0
    name, equals, value = params.partition("=")
    value = value.strip()
    # qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ): no sign, exponent or space
    if (name.strip() != "q" or not equals or not 1 <= len(value) <= 5 or value[0] not in "01"
            or not value.isascii() or not value.replace(".", "", 1).isdigit()):
        return None
    weight = float(value)
    return weight if weight <= 1 else None


def negotiate(response: Response, accept_encoding: str | None) -> None:
    """Send ``response`` (a text body: JSON) gzip-compressed when the client accepts gzip and
    the result is smaller even base64-encoded, as the function returns it to the gateway: the
    answer then never grows toward Lambda's 6 MB response limit. Either way the answer says
    it varies with ``Accept-Encoding``, for caches in front of the API."""
    headers = response.headers
    headers["vary"] = "accept-encoding"
    if accept_encoding is None or not accepts_gzip(accept_encoding):
        return
    body = response.body_bytes()
    packed = zlib.compress(body, LEVEL, GZIP_WBITS)
    if (len(packed) + 2) // 3 * 4 >= len(body):
        return
    response.body, response.text = packed, None
    headers["content-encoding"] = GZIP


def inflate(body: bytes, content_encoding: str, limit: int) -> bytes:
    """``body`` with the codings ``content_encoding`` lists undone (they are listed in the
    order they were applied), or a 415 for a coding we do not know, a 400 for data that is not
    in it, a 413 as soon as the result passes ``limit`` bytes (a 100 KB gzip of 100 MB of zeros
    costs a bounded decompression, never the memory)."""
    codings = [c for c in content_encoding.lower().replace(" ", "").replace("\t", "").split(",")
               if c and c != "identity"]
    if len(codings) > MAX_CODINGS:
        raise UnsupportedMediaTypeError(
            f"content-encoding lists {len(codings)} codings; at most {MAX_CODINGS} are undone",
            headers={"accept-encoding": "gzip, deflate"})
    for coding in reversed(codings):
        wbits = WBITS.get(coding)
        if wbits is None:
            raise UnsupportedMediaTypeError(
                f"content-encoding {coding!r:.40} not supported: send gzip or deflate",
                headers={"accept-encoding": "gzip, deflate"})
        body = _undo(body, coding, wbits, limit)
    return body


def _undo(data: bytes, coding: str, wbits: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:  # a gzip body may hold several members, one after another (RFC 1952 §2.2)
        stream = zlib.decompressobj(wbits)
        try:
            part = stream.decompress(data, limit - size + 1)
        except zlib.error as exc:
            if wbits == 15 and not parts:  # no zlib header: bare deflate under the name
                return _undo(data, coding, BARE_DEFLATE, limit)
            raise BadRequestError(f"the body is not valid {coding} data ({exc})") from None
        size += len(part)
        if size > limit:
            raise PayloadTooLargeError(f"the request body is over {limit} bytes once its "
                                       f"{coding} coding is undone; the limit is {limit}")
        parts.append(part)
        if not stream.eof:
            raise BadRequestError(f"the {coding} body is cut short")
        data = stream.unused_data
        if not data or wbits != GZIP_WBITS:
            if data:
                raise BadRequestError(f"{len(data)} bytes follow the {coding} data")
            return b"".join(parts)
