"""Lambda Function URLs: payload 2.0, told apart from HTTP APIs by the ``lambda-url`` domain."""

from __future__ import annotations

from handler.sources.http_api import HttpApiSource

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class FunctionUrlSource(HttpApiSource):
    name = "function-url"

    def matches(self, event: Any) -> bool:
        # the domain first: an HTTP API event (tried next) fails here at the first look
        context = event.get("requestContext") if isinstance(event, dict) else None
        domain = context.get("domainName") if isinstance(context, dict) else None
        # (a domain that is no string is no Function URL's: no str() of it on every request)
        return (domain.__class__ is str and ".lambda-url." in domain
                and super().matches(event))


FUNCTION_URL = FunctionUrlSource()
