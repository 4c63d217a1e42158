"""The route table alone drives dispatch and the error shape (``handler.routes``): a toy
protocol family added as rows of the table (its handlers and its errors in this module) is
dispatched, refused when the model lacks what a route needs, and answers its 404s, 405s and
refusals in its own shape, while the other families keep theirs."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace
from typing import Any

import pytest

from handler import routes
from handler.errors import NotFoundError, OnnxLambdaError
from handler.http import Request, Response
from handler.routes import Family, Route, Table
from handler.service import Service
from handler.settings import Settings
from handler.telemetry import Telemetry
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event

TOY = Family("toy", __name__)


def error(exc: OnnxLambdaError, headers: dict[str, str], request_id: str) -> Response:
    """The toy protocol's error shape."""
    return Response(exc.status, headers=headers, payload={"toy_error": exc.message,
                                                          "toy_id": request_id})


def refusal(served: Any, route: Route) -> OnnxLambdaError:
    return NotFoundError(f"{served.name} cannot {route.needs} ({route.path})")


def echo(served: Any, request: Request, params: dict[str, str], timer: Any,
         context: Any) -> Response:
    return Response(200, payload={"echo": request.body.decode(), "model": served.name})


TOY_ROWS = (
    ("/toy/echo", {"POST": Route("toy_echo", f"{__name__}:echo", TOY)}),
    ("/toy/shout", {"POST": Route("toy_shout", f"{__name__}:echo", TOY, needs="shout")}),
)


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setattr(routes, "TABLE", Table((*routes.ROUTES, *TOY_ROWS)))
    telemetry = Telemetry(namespace="T", function_name="f", metrics=False, level="error",
                          stream=io.StringIO())
    pipeline = SimpleNamespace(name="toy", capabilities=frozenset({"predict"}))
    return Service(Settings.from_env({}), SimpleNamespace(name="m"), pipeline,  # type: ignore[arg-type]
                   telemetry, {})


def call(service: Service, method: str, path: str, body: str = "") -> tuple[int, Any]:
    result = service(http_event(method, path, body), Context("req-9"))
    return result["statusCode"], json.loads(result["body"])


def test_a_toy_route_is_dispatched_through_the_table(service: Service) -> None:
    assert call(service, "POST", "/toy/echo", "hi") == (200, {"echo": "hi", "model": "m"})


def test_a_route_the_model_cannot_serve_is_refused_in_the_familys_shape(
        service: Service) -> None:
    assert call(service, "POST", "/toy/shout", "hi") == (
        404, {"toy_error": "m cannot shout (/toy/shout)", "toy_id": "req-9"})


def test_the_familys_404_and_405_take_its_shape(service: Service) -> None:
    status, answer = call(service, "GET", "/toy/echo")
    assert status == 405 and set(answer) == {"toy_error", "toy_id"}
    status, answer = call(service, "GET", "/toy/nowhere")
    assert status == 404 and "POST /toy/shout" in answer["toy_error"]


def test_the_other_families_keep_their_shapes(service: Service) -> None:
    status, answer = call(service, "GET", "/nowhere")
    assert status == 404 and answer["error"]["type"] == "NotFound"  # ours
    status, answer = call(service, "GET", "/v1/nowhere")
    assert status == 404 and answer["error"]["type"] == "invalid_request_error"  # OpenAI's
    status, answer = call(service, "POST", "/embed", "{}")
    assert (status, answer["error_type"]) == (424, "Backend")  # TEI's refusal
    status, answer = call(service, "GET", "/v2/models/other")
    assert status == 404 and isinstance(answer["error"], str)  # the V2 protocol's


def test_a_family_cannot_share_another_familys_first_segment() -> None:
    with pytest.raises(ValueError, match="openai"):
        Table((*routes.ROUTES, ("/v1/toy", {"GET": Route("toy", f"{__name__}:echo", TOY)})))
