"""HTTP content codings: Accept-Encoding negotiation (RFC 9110 §12.5.3) and coded request
bodies undone within the body limit (§8.4)."""

from __future__ import annotations

import base64
import gzip
import os
import zlib

import pytest

from handler.compression import accepts_gzip, inflate, negotiate
from handler.errors import BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError
from handler.http import Response

LIMIT = 1 << 20


@pytest.mark.parametrize(("header", "expected"), [
    ("gzip", True),
    ("GZip", True),
    ("x-gzip", True),
    ("gzip, deflate, br, zstd", True),  # what browsers and httpx send
    ("deflate, gzip;q=1.0, *;q=0.5", True),
    (" gzip ; q=0.001 ", True),
    ("gzip;q=1", True),
    ("gzip;q=0.", False),  # "0." is a well-formed qvalue: weight 0
    ("*", True),
    ("*;q=0.1", True),
    ("br;q=1, *", True),
    ("", False),
    ("identity", False),
    ("deflate, br", False),
    ("gzip;q=0", False),
    ("gzip;q=0.000", False),
    ("gzip;q=0, *", False),  # named with weight 0: the wildcard does not bring it back
    ("*;q=0", False),
    ("br, *;q=0", False),
    ("gzipx", False),
    ("gzip;q=2", False),  # malformed weights: the element is skipped
    ("gzip;q=-1", False),
    ("gzip;q=1e0", False),
    ("gzip;q=0.٣", False),  # a non-ASCII digit float() would read
    ("gzip;q=", False),
    ("gzip;x=1", False),
    ("gzip;q=0.5000", False),  # at most three decimals
    ("gzip;q=bad, gzip", True),  # a later well-formed element still counts
    (",,,;;;==", False),
])
def test_accept_encoding(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected


def test_accept_encoding_of_a_huge_header_is_linear() -> None:
    assert accepts_gzip("br, " * 5000 + "gzip") is True
    assert accepts_gzip(";" * 20000) is False


def json_response(values: int = 800) -> Response:
    response = Response(200, {"outputs": {"y": [i / 7 for i in range(values)]}})
    response.body_bytes()
    return response


def test_negotiate_compresses_when_asked() -> None:
    response = json_response()
    plain = response.body
    negotiate(response, "gzip, deflate")
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["vary"] == "accept-encoding"
    assert response.headers["content-type"] == "application/json"
    assert response.text is None and response.sent_in_base64
    assert gzip.decompress(response.body) == plain
    assert len(response.body) < len(plain) // 2


@pytest.mark.parametrize("header", [None, "identity", "gzip;q=0", "br"])
def test_negotiate_leaves_the_body_when_gzip_is_not_accepted(header: str | None) -> None:
    response = json_response()
    plain, text = response.body, response.text
    negotiate(response, header)
    assert (response.body, response.text) == (plain, text)
    assert "content-encoding" not in response.headers and not response.sent_in_base64
    assert response.headers["vary"] == "accept-encoding"  # it could have: caches must know


def test_negotiate_keeps_a_body_gzip_would_not_shrink_in_base64() -> None:
    # random base64 text: gzip saves ~20%, less than base64 adds on the way to the gateway
    noise = base64.b64encode(os.urandom(6000)).decode()
    response = Response(200, {"noise": noise})
    response.body_bytes()
    plain = response.body
    assert len(zlib.compress(plain, 1, 31)) < len(plain)  # gzip alone would shrink it
    negotiate(response, "gzip")
    assert response.body == plain and "content-encoding" not in response.headers


PLAIN = b'{"inputs": [[1.0, 2.0, 3.0, 4.0]]}' * 50
# (mtime=0: a gzip header without the time, so that the test ids are the same in every process;
# pytest-xdist's workers must collect the same tests)


@pytest.mark.parametrize(("header", "coded"), [
    ("gzip", gzip.compress(PLAIN, mtime=0)),
    ("x-gzip", gzip.compress(PLAIN, mtime=0)),
    ("GZIP", gzip.compress(PLAIN, mtime=0)),
    ("deflate", zlib.compress(PLAIN)),  # the zlib format, as RFC 9110 and tritonclient mean it
    ("deflate", zlib.compress(PLAIN, wbits=-15)),  # bare deflate under the same name
    ("identity", PLAIN),
    ("gzip, identity", gzip.compress(PLAIN, mtime=0)),
    ("deflate, gzip", gzip.compress(zlib.compress(PLAIN), mtime=0)),  # listed in the order applied
    ("gzip", gzip.compress(PLAIN[:700], mtime=0)  # two members
     + gzip.compress(PLAIN[700:], mtime=0)),
])
def test_inflate(header: str, coded: bytes) -> None:
    assert inflate(coded, header, LIMIT) == PLAIN


@pytest.mark.parametrize(("header", "coded", "error", "words"), [
    ("br", PLAIN, UnsupportedMediaTypeError, "'br' not supported"),
    ("gzip, gzip, gzip", PLAIN, UnsupportedMediaTypeError, "at most 2"),
    ("gzip", PLAIN, BadRequestError, "not valid gzip"),
    ("gzip", gzip.compress(PLAIN, mtime=0)[:-12], BadRequestError, "cut short"),
    ("gzip", gzip.compress(PLAIN, mtime=0) + b"junk", BadRequestError, "not valid gzip"),
    ("deflate", zlib.compress(PLAIN) + b"junk", BadRequestError, "4 bytes follow"),
    ("deflate", b"\xff" * 40, BadRequestError, "not valid deflate"),
    ("gzip", b"", BadRequestError, "cut short"),
])
def test_inflate_refuses(header: str, coded: bytes, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words) as raised:
        inflate(coded, header, LIMIT)
    if error is UnsupportedMediaTypeError:  # RFC 9110 §15.5.16: say what would do
        assert raised.value.headers == {"accept-encoding": "gzip, deflate"}


def test_a_bomb_stops_at_the_limit() -> None:
    packer, zeros = zlib.compressobj(1, zlib.DEFLATED, 31), bytes(1 << 20)
    bomb = b"".join([*(packer.compress(zeros) for _ in range(64)), packer.flush()])
    assert len(bomb) < 400_000  # 64 MB of zeros
    with pytest.raises(PayloadTooLargeError, match="over 1048576 bytes"):
        inflate(bomb, "gzip", LIMIT)
    exact = gzip.compress(bytes(LIMIT))
    assert len(inflate(exact, "gzip", LIMIT)) == LIMIT  # the limit itself is allowed
    with pytest.raises(PayloadTooLargeError):  # members add up
        inflate(exact + gzip.compress(b"x"), "gzip", LIMIT)
