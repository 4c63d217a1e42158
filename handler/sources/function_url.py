"""Lambda Function URLs: payload 2.0, told apart from HTTP APIs by the ``lambda-url`` domain."""

from __future__ import annotations

from typing import Any

from handler.sources.http_api import HttpApiSource


class FunctionUrlSource(HttpApiSource):
    name = "function-url"

    def matches(self, event: Any) -> bool:
        return (super().matches(event)
                and ".lambda-url." in str(event["requestContext"].get("domainName", "")))


FUNCTION_URL = FunctionUrlSource()
