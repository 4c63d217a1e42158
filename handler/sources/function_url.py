"""Lambda Function URLs: payload 2.0, told apart from HTTP APIs by the ``lambda-url`` domain."""

from __future__ import annotations

from handler.sources.http_api import HttpApiSource


class FunctionUrlSource(HttpApiSource):
    name = "function-url"
    function_url = True  # HttpApiSource.matches: the event's domain is a lambda-url one


FUNCTION_URL = FunctionUrlSource()
