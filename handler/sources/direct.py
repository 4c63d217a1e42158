"""Direct invocation (``aws lambda invoke``, boto3, Step Functions): the event *is* the body.

An Open Inference Protocol V2 request (``inputs`` as a list of named tensors) goes to the V2
infer route, anything else to ``POST /predict``. The response is the JSON body object itself;
errors come back as ``{"error": {...}, "requestId"}`` too, so a caller checks one shape.
"""

from __future__ import annotations

from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class DirectSource:
    name = "direct"

    def matches(self, event: Any) -> bool:
        return True

    def to_request(self, event: Any) -> Request:
        inputs = event.get("inputs") if isinstance(event, dict) else None
        is_v2 = (isinstance(inputs, list) and bool(inputs)
                 and all(isinstance(item, dict) and "datatype" in item for item in inputs))
        path = "/v2/models/_/infer" if is_v2 else "/predict"
        return Request(method="POST", path=path, parsed=event, raw_response=True,
                       headers={"content-type": "application/json"})

    def to_response(self, response: Response, event: Any) -> Any:
        return response.payload


DIRECT = DirectSource()
