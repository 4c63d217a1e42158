from __future__ import annotations

import re

import pytest

from handler.errors import MethodNotAllowedError, NotFoundError
from handler.routes import ROUTES, match


@pytest.mark.parametrize(("method", "path", "operation", "params"), [
    ("POST", "/predict", "predict", {}),
    ("POST", "/predict/", "predict", {}),
    ("POST", "/v2/models/m/infer", "v2_infer", {"name": "m"}),
    ("POST", "/v2/models/m/versions/2/infer", "v2_infer", {"name": "m", "version": "2"}),
    ("GET", "/v2/models/m", "v2_metadata", {"name": "m"}),
    ("GET", "/v2/models/m/ready", "v2_model_ready", {"name": "m"}),
    ("GET", "/v2/health/ready", "ready", {}),
    ("GET", "/v2/health/live", "live", {}),
    ("GET", "/health", "health", {}),
    ("POST", "/v1/embeddings", "openai_embeddings", {}),
    ("POST", "/v1/chat/completions", "openai_chat", {}),
    ("POST", "/v1/completions", "openai_completions", {}),
    ("GET", "/v1/models", "openai_models", {}),
    ("GET", "/v1/models/", "openai_models", {}),
    ("GET", "/v1/models/all-MiniLM-L6-v2", "openai_model", {"model": "all-MiniLM-L6-v2"}),
    ("POST", "/embed", "tei_embed", {}),
    ("POST", "/rerank", "tei_rerank", {}),
    ("POST", "/tokenize", "tei_tokenize", {}),
    ("GET", "/info", "tei_info", {}),
])
def test_routes(method: str, path: str, operation: str, params: dict[str, str]) -> None:
    assert found(method, path) == (operation, params)


def found(method: str, path: str) -> tuple[str, dict[str, str]]:
    route, params = match(method, path)
    return route.operation, params


@pytest.mark.parametrize("path", ["/v1/models/a/b", "/v1/embedding", "/v1"])
def test_near_misses_of_the_openai_routes_are_404(path: str) -> None:
    with pytest.raises(NotFoundError):
        match("GET", path)


def test_unknown_path_is_404() -> None:
    with pytest.raises(NotFoundError):
        match("GET", "/v2/models/m/infer/extra")


@pytest.mark.parametrize("path", ["/nope", "/x" * 5000])
def test_404_lists_the_routes_and_every_listed_route_matches(path: str) -> None:
    with pytest.raises(NotFoundError) as info:
        match("GET", path)
    listed = info.value.message.split("; the routes are ", 1)[1].split(", ")
    assert len(listed) == sum(len(methods) for _, methods in ROUTES)
    for entry in listed:
        method, template = entry.split(" ")
        for optional in (r"\1", ""):  # "[/versions/{version}]" given and left out
            concrete = re.sub(r"\[(.*?)\]", optional, template)
            assert match(method, concrete.format(name="m", version="2", model="m"))


def test_wrong_method_is_405_with_allow() -> None:
    with pytest.raises(MethodNotAllowedError) as info:
        match("GET", "/predict")
    assert info.value.headers == {"allow": "POST"}


def test_model_routes_carry_their_name_and_version() -> None:
    assert found("POST", "/predict") == ("predict", {})
    assert found("GET", "/health/") == ("health", {})
    assert found("GET", "/v2/models/m") == ("v2_metadata", {"name": "m"})
    assert found("POST", "/v2/models/m/versions/2/infer") == (
        "v2_infer", {"name": "m", "version": "2"})
    with pytest.raises(NotFoundError):
        match("GET", "/nowhere")
