"""A stand-in for the ``context`` object Lambda passes a handler: the attributes handlers and
Powertools read. Benchmarks and tests that call a handler in process use this one (stdlib only,
so a bare interpreter that measures a cold start can import it too)."""

from __future__ import annotations

ACCOUNT = "123456789012"


class LambdaContext:
    def __init__(self, request_id: str = "req-1", remaining_ms: int = 30_000, *,
                 function_name: str = "Inference", memory_mb: int = 1769) -> None:
        self.aws_request_id = request_id
        self.remaining_ms = remaining_ms
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms
