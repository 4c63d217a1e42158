"""The headers a request carries, whatever event shape they came in: names lower-cased (HTTP's
are case-insensitive), null values dropped, other values as text; headers that are not an
object are a 400."""

from __future__ import annotations

from typing import Any

import pytest

from handler.errors import BadRequestError
from handler.sources import ALB, HTTP_API, REST_API


def http_api(headers: Any) -> dict[str, Any]:
    return {"version": "2.0", "rawPath": "/predict", "headers": headers, "body": "{}",
            "requestContext": {"http": {"method": "POST", "path": "/predict"}}}


def rest_api(headers: Any) -> dict[str, Any]:
    return {"httpMethod": "POST", "path": "/predict", "headers": headers, "body": "{}"}


@pytest.mark.parametrize("event", [http_api, rest_api])
def test_names_are_lower_cased_and_nulls_dropped(event: Any) -> None:
    request = (HTTP_API if event is http_api else REST_API).to_request(event({
        "Content-Type": "application/json", "X-Count": 5, "X-None": None,
        "x-\u03a3": "sigma", "accept": "*/*"}))
    assert request.headers == {"content-type": "application/json", "x-count": "5",
                               "x-\u03c3": "sigma", "accept": "*/*"}
    assert request.content_type == "application/json"


def test_alb_multi_value_headers_keep_the_last_value() -> None:
    request = ALB.to_request({"httpMethod": "POST", "path": "/predict", "body": "{}",
                              "requestContext": {"elb": {}},
                              "multiValueHeaders": {"Accept": ["text/csv", "*/*"]}})
    assert request.headers == {"accept": "*/*"}


@pytest.mark.parametrize("headers", [None, {}])
def test_no_headers(headers: Any) -> None:
    assert HTTP_API.to_request(http_api(headers)).headers == {}


def test_headers_of_the_wrong_type_are_a_400() -> None:
    with pytest.raises(BadRequestError):
        HTTP_API.to_request(http_api(["content-type"]))
