"""Method + path → operation name. Unknown path → 404; known path, other method → 405."""

from __future__ import annotations

import re

from handler.errors import MethodNotAllowedError, NotFoundError

_MODEL = "/v2/models/{name}[/versions/{version}]"  # a model's routes start with this
_OPENAI_MODEL = "/v1/models/"  # + {model}: OpenAI's model card (handler.openai_api)

# path template → method → operation, in the 404 listing's order
ROUTES: tuple[tuple[str, dict[str, str]], ...] = (
    ("/predict", {"POST": "predict"}),
    (_MODEL + "/infer", {"POST": "v2_infer"}),
    (_MODEL + "/ready", {"GET": "v2_model_ready"}),
    (_MODEL, {"GET": "v2_metadata"}),
    ("/v2/health/ready", {"GET": "ready"}),
    ("/v2/health/live", {"GET": "live"}),
    ("/v2", {"GET": "v2_server"}),
    ("/health", {"GET": "health"}),
    ("/v1/embeddings", {"POST": "openai_embeddings"}),
    ("/v1/chat/completions", {"POST": "openai_chat"}),  # generative models (handler.openai_chat)
    ("/v1/completions", {"POST": "openai_completions"}),
    ("/v1/models", {"GET": "openai_models"}),
    (_OPENAI_MODEL + "{model}", {"GET": "openai_model"}),
    ("/embed", {"POST": "tei_embed"}),
    ("/rerank", {"POST": "tei_rerank"}),
    ("/tokenize", {"POST": "tei_tokenize"}),
    ("/info", {"GET": "tei_info"}),
)
# text-embeddings-inference's (handler.tei_api)
_TEI = frozenset({"/embed", "/rerank", "/tokenize", "/info"})

# Plain paths are one dict lookup; a model's routes share one expression, whose last group is
# the route's tail (one regular expression, not one per route: ≈ 0.3 M instructions each).
STATIC: dict[str, dict[str, str]] = {path: methods for path, methods in ROUTES
                                     if not path.startswith(_MODEL)}
_BY_TAIL: dict[str | None, dict[str, str]] = {
    path[len(_MODEL):] or None: methods for path, methods in ROUTES if path.startswith(_MODEL)}


_MODEL_PATH = re.compile(r"/v2/models/(?P<name>[^/]+)(?:/versions/(?P<version>[^/]+))?"
                         r"(?P<tail>/infer|/ready)?")


def is_openai(path: str) -> bool:
    """An OpenAI-compatible route (its errors take OpenAI's shape)."""
    return path.startswith("/v1/")


def is_tei(path: str) -> bool:
    """A text-embeddings-inference route (its errors take TEI's shape)."""
    return path.rstrip("/") in _TEI


def is_v2(path: str) -> bool:
    """An Open Inference Protocol route (its errors take the protocol's shape)."""
    return path == "/v2" or path.startswith("/v2/")


def match(method: str, path: str) -> tuple[str, dict[str, str]]:
    """→ (operation, path parameters)."""
    if len(path) > 1:
        path = path.rstrip("/")
    params: dict[str, str] = {}
    methods = STATIC.get(path)
    model = path[len(_OPENAI_MODEL):] if path.startswith(_OPENAI_MODEL) else ""
    if methods is None and model and "/" not in model:
        methods, params = STATIC[_OPENAI_MODEL + "{model}"], {"model": model}
    elif methods is None:
        found = _MODEL_PATH.fullmatch(path)
        if found is None:
            # the echo is clipped so that the listing always fits the error's message limit
            raise NotFoundError(f"no route {method[:20]} {path[:200]}; the routes are "
                                f"{listing()}")
        name, version, tail = found.group("name", "version", "tail")
        methods = _BY_TAIL[tail]
        params = {"name": name} if version is None else {"name": name, "version": version}
    operation = methods.get(method)
    if operation is None:
        allowed = ", ".join(methods)
        raise MethodNotAllowedError(f"{method} {path}: allowed {allowed}",
                                    headers={"allow": allowed})
    return operation, params


def listing() -> str:
    """Every route as ``METHOD /path``, parameters as ``{name}`` (the 404's message)."""
    return ", ".join(f"{method} {path}" for path, methods in ROUTES for method in methods)
