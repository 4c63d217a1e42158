"""Method + path → operation name. Unknown path → 404; known path, other method → 405."""

from __future__ import annotations

import re

from handler.errors import MethodNotAllowedError, NotFoundError

_MODEL = r"/v2/models/(?P<name>[^/]+)(?:/versions/(?P<version>[^/]+))?"

ROUTES: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = tuple(
    (re.compile(pattern), methods) for pattern, methods in (
        (r"/predict", {"POST": "predict"}),
        (_MODEL + r"/infer", {"POST": "v2_infer"}),
        (_MODEL + r"/ready", {"GET": "v2_model_ready"}),
        (_MODEL, {"GET": "v2_metadata"}),
        (r"/v2/health/ready", {"GET": "ready"}),
        (r"/v2/health/live", {"GET": "live"}),
        (r"/v2", {"GET": "v2_server"}),
        (r"/health", {"GET": "health"}),
    )
)


# Plain-text paths (no parameters), looked up before any regular expression runs.
STATIC: dict[str, dict[str, str]] = {
    pattern.pattern: methods for pattern, methods in ROUTES
    if re.escape(pattern.pattern) == pattern.pattern}


def is_v2(path: str) -> bool:
    """An Open Inference Protocol route (its errors take the protocol's shape)."""
    return path == "/v2" or path.startswith("/v2/")


def match(method: str, path: str) -> tuple[str, dict[str, str]]:
    if len(path) > 1:
        path = path.rstrip("/")
    methods = STATIC.get(path)
    if methods is not None and method in methods:
        return methods[method], {}
    for pattern, methods in ROUTES:
        found = pattern.fullmatch(path)
        if found is None:
            continue
        operation = methods.get(method)
        if operation is None:
            allowed = ", ".join(methods)
            raise MethodNotAllowedError(f"{method} {path}: allowed {allowed}",
                                        headers={"allow": allowed})
        return operation, {k: v for k, v in found.groupdict().items() if v is not None}
    # the echo is clipped so that the listing always fits the error's message limit
    raise NotFoundError(f"no route {method[:20]} {path[:200]}; the routes are {listing()}")


def listing() -> str:
    """Every route as ``METHOD /path``, parameters as ``{name}`` (the 404's message)."""
    model = "/v2/models/{name}[/versions/{version}]"
    return ", ".join(f"{method} {pattern.pattern.replace(_MODEL, model)}"
                     for pattern, methods in ROUTES for method in methods)
