"""``sources.base.lower_headers`` takes a copy of headers that are lower-case strings already
(API Gateway HTTP API payload 2.0) instead of its loop: both ways must give the same dict."""

from __future__ import annotations

from typing import Any

import pytest

from handler.errors import BadRequestError
from handler.sources import base

GATEWAY = {"accept": "*/*", "accept-encoding": "gzip, deflate", "content-length": "38",
           "content-type": "application/json", "host": "abc.execute-api.us-east-1.amazonaws.com",
           "user-agent": "python-httpx/0.28.1", "x-forwarded-for": "203.0.113.7"}


class Headers(dict):  # type: ignore[type-arg]
    def items(self) -> Any:  # a subclass is read through its own items(), as the loop does
        return [(key, f"{value}!") for key, value in super().items()]


CASES = [
    GATEWAY,
    {**GATEWAY, "X-Upper": "V"},
    {**GATEWAY, "Content-Type": "text/xml"},  # two names that lower to one: the last wins
    {**GATEWAY, "x-n": 5, "x-f": 1.5},
    {**GATEWAY, "x-none": None},
    {**GATEWAY, 7: "seven", None: "none"},
    {**GATEWAY, "x-\u03a3\u03a3": "sigma", "x-\u03c3\u03c2": "final"},
    {**GATEWAY, "x-\u0130": "dotted", "x-\u00df": "sharp", "x-\u01c5": "title"},
    {**GATEWAY, "x-\u2160": "numeral", "x-1": "digits", "\n": "newline"},
    {"a": "1", "b": "2", "c": "3"},  # few: the loop either way
    {"1": "1", "2": "2", "3": "3", "4": "4"},  # no cased letter at all
    Headers(GATEWAY),
    {},
]


def looped(headers: dict[Any, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    with monkeypatch.context() as patch:
        patch.setattr(base, "_FEW_HEADERS", 10**9)  # the loop for any number of headers
        return base.lower_headers(headers)


@pytest.mark.parametrize("headers", CASES)
def test_copy_and_loop_agree(headers: dict[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    want = looped(headers, monkeypatch)
    got = base.lower_headers(headers)
    assert got == want and list(got) == list(want)
    assert all(key.__class__ is str and value.__class__ is str for key, value in got.items())
    assert got is not headers  # a copy: a source may add to it (cookies)


def test_gateway_headers_take_the_copy() -> None:
    """The case the copy is for takes it: its names are the event's own string objects (the
    loop's are new ones, from lower())."""
    headers = {"".join(["x-", key]): value for key, value in GATEWAY.items()}
    got = base.lower_headers(headers)
    assert all(a is b for a, b in zip(got, headers, strict=True))
    looped_names = base.lower_headers({**headers, "X-Up": "v"})
    assert not any(a is b for a, b in zip(looped_names, headers, strict=False))


def test_headers_of_the_wrong_type_are_a_400() -> None:
    with pytest.raises(BadRequestError):
        base.lower_headers(["content-type"])
