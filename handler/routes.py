"""The route table: method + path → the route that serves it, and the protocol family whose
shape its answers and errors take. Unknown path → 404; known path, other method → 405.

``ROUTES`` is the one table: ``Service`` dispatches through it, the error shape is its
family's, the 404 lists it, and the SAM template is checked against it (tests/unit/
test_template.py). Adding a route is one row here and the module its handler lives in; a new
protocol family is a ``Family`` naming its errors module and rows whose paths start with a
first segment of their own (the family of a path that matches no row: its first segment's).
"""

from __future__ import annotations

import re

from handler.errors import MethodNotAllowedError, NotFoundError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from handler.errors import OnnxLambdaError
    from handler.http import Response

_MODEL = "/v2/models/{name}[/versions/{version}]"  # a model's routes start with this
_OPENAI_MODEL = "/v1/models/"  # + {model}: OpenAI's model card (handler.api.openai.models)


class Family:
    """A protocol: the module (imported on first use) whose ``error(exc, headers, request_id)``
    shapes an error as its clients read it and whose ``refusal(served, route)`` says that the
    model cannot serve one of its routes."""

    __slots__ = ("_module", "module", "name")

    def __init__(self, name: str, module: str) -> None:
        self.name, self.module = name, module
        self._module: ModuleType | None = None

    def _errors(self) -> Any:
        if self._module is None:
            self._module = __import__(self.module, fromlist=("error",))
        return self._module

    def error(self, exc: OnnxLambdaError, request_id: str) -> Response:
        headers = {**exc.headers, "x-error-type": exc.type}
        response: Response = self._errors().error(exc, headers, request_id)
        return response

    def refusal(self, served: Any, route: Route) -> OnnxLambdaError:
        refused: OnnxLambdaError = self._errors().refusal(served, route)
        return refused


class Route:
    """One operation: its handler (``module:function``, imported on first use; it is called
    as ``handler(served, request, params, timer, context)`` and returns a ``Response``), its
    family, the capability the model must declare (``Pipeline.capabilities``; None: any model)
    and whether its answers may be cached (``ONNX_LAMBDA_CACHE_SIZE``)."""

    __slots__ = ("cached", "family", "needs", "operation", "path", "run", "target")

    def __init__(self, operation: str, target: str, family: Family, needs: str | None = None,
                 cached: bool = False) -> None:
        self.operation, self.target, self.family = operation, target, family
        self.needs, self.cached = needs, cached
        self.path = ""  # the row's path template (set by Table)
        self.run: Callable[..., Response] | None = None  # the handler, once loaded

    def load(self) -> Callable[..., Response]:
        """The handler (``run``), imported now if it was not yet."""
        if self.run is None:
            module, _, function = self.target.partition(":")
            self.run = getattr(__import__(module, fromlist=(function,)), function)
        assert self.run is not None
        return self.run

    def __repr__(self) -> str:
        return f"Route({self.operation!r})"


OURS = Family("ours", "handler.api.predict")
V2 = Family("v2", "handler.api.v2")
OPENAI = Family("openai", "handler.api.openai.errors")
TEI = Family("tei", "handler.api.tei.errors")
_V2 = "handler.api.v2:"
_OAI = "handler.api.openai."
_TEI_EMBED = "handler.api.tei.embed:"

# path template → method → route, in the 404 listing's order
ROUTES: tuple[tuple[str, dict[str, Route]], ...] = (
    ("/predict", {"POST": Route("predict", "handler.api.predict:predict", OURS, cached=True)}),
    (_MODEL + "/infer", {"POST": Route("v2_infer", _V2 + "infer", V2, cached=True)}),
    (_MODEL + "/ready", {"GET": Route("v2_model_ready", _V2 + "model_ready", V2)}),
    (_MODEL, {"GET": Route("v2_metadata", _V2 + "metadata", V2)}),
    ("/v2/health/ready", {"GET": Route("ready", _V2 + "ready", V2)}),
    ("/v2/health/live", {"GET": Route("live", _V2 + "live", V2)}),
    ("/v2", {"GET": Route("v2_server", _V2 + "server", V2)}),
    ("/health", {"GET": Route("health", "handler.api.predict:health", OURS)}),
    ("/v1/embeddings", {"POST": Route("openai_embeddings", _OAI + "embeddings:embeddings",
                                      OPENAI, "embed")}),
    ("/v1/chat/completions", {"POST": Route("openai_chat", _OAI + "chat:chat", OPENAI,
                                            "chat")}),
    ("/v1/completions", {"POST": Route("openai_completions", _OAI + "chat:completions",
                                       OPENAI, "generate")}),
    ("/v1/models", {"GET": Route("openai_models", _OAI + "models:models", OPENAI)}),
    (_OPENAI_MODEL + "{model}", {"GET": Route("openai_model", _OAI + "models:model", OPENAI)}),
    ("/embed", {"POST": Route("tei_embed", _TEI_EMBED + "embed", TEI, "embed")}),
    ("/rerank", {"POST": Route("tei_rerank", "handler.api.tei.rerank:rerank", TEI, "rerank")}),
    ("/tokenize", {"POST": Route("tei_tokenize", _TEI_EMBED + "tokenize", TEI, "tokenize")}),
    ("/info", {"GET": Route("tei_info", "handler.api.tei.info:info", TEI)}),
)

_MODEL_PATH = re.compile(r"/v2/models/(?P<name>[^/]+)(?:/versions/(?P<version>[^/]+))?"
                         r"(?P<tail>/infer|/ready)?")


def _segment(path: str) -> str:
    """A path's first segment: what names its protocol family."""
    return path.split("/", 2)[1] if path.startswith("/") and len(path) > 1 else ""


class Table:
    """``rows`` made fast to match. Plain paths are one dict lookup; a model's routes share one
    expression, whose last group is the route's tail (one regular expression, not one per
    route: ≈ 0.3 M instructions each)."""

    def __init__(self, rows: tuple[tuple[str, dict[str, Route]], ...]) -> None:
        self.rows = rows
        self.static = {path: methods for path, methods in rows if not path.startswith(_MODEL)}
        self.by_tail = {path[len(_MODEL):] or None: methods for path, methods in rows
                        if path.startswith(_MODEL)}
        self.families: dict[str, Family] = {}
        for path, methods in rows:
            for route in methods.values():
                route.path = path
                known = self.families.setdefault(_segment(path), route.family)
                if known is not route.family:  # the error shape of a 404 would be ambiguous
                    raise ValueError(f"{path}: its first segment belongs to {known.name}")

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        """→ (route, path parameters)."""
        if len(path) > 1:
            path = path.rstrip("/")
        params: dict[str, str] = {}
        methods = self.static.get(path)
        model = path[len(_OPENAI_MODEL):] if path.startswith(_OPENAI_MODEL) else ""
        if methods is None and model and "/" not in model:
            methods, params = self.static[_OPENAI_MODEL + "{model}"], {"model": model}
        elif methods is None:
            found = _MODEL_PATH.fullmatch(path)
            if found is None or found.group("tail") not in self.by_tail:
                # the echo is clipped so that the listing always fits the error's message limit
                raise NotFoundError(f"no route {method[:20]} {path[:200]}; the routes are "
                                    f"{self.listing()}")
            name, version, tail = found.group("name", "version", "tail")
            methods = self.by_tail[tail]
            params = {"name": name} if version is None else {"name": name, "version": version}
        route = methods.get(method)
        if route is None:
            allowed = ", ".join(methods)
            raise MethodNotAllowedError(f"{method} {path}: allowed {allowed}",
                                        headers={"allow": allowed})
        return route, params

    def family(self, path: str) -> Family:
        """The family whose shape a request to ``path`` gets its errors in (ours by default)."""
        return self.families.get(_segment(path), OURS)

    def listing(self) -> str:
        """Every route as ``METHOD /path``, parameters as ``{name}`` (the 404's message)."""
        return ", ".join(f"{method} {path}" for path, methods in self.rows for method in methods)


TABLE = Table(ROUTES)


def match(method: str, path: str) -> tuple[Route, dict[str, str]]:
    """``TABLE.match``: → (route, path parameters)."""
    return TABLE.match(method, path)


def listing() -> str:
    return TABLE.listing()
