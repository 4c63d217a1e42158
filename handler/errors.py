"""Error hierarchy: each error knows its HTTP status and a stable ``type`` string.

Clients see ``{"error": {"type", "message"}, "requestId"}`` (on ``/v2/`` routes the Open Inference
Protocol's ``{"error": message, "type", "requestId"}``) and an ``x-error-type`` header; stack
traces go to the log only.
"""

from __future__ import annotations

MAX_MESSAGE = 2000


class OnnxLambdaError(Exception):
    """Base class. ``status`` is the HTTP status, ``type`` the stable machine-readable name."""

    status = 500
    type = "InternalError"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        # Messages quote the request (names, values): a 6 MB input name must not make a 6 MB
        # error body, over Lambda's response limit.
        self.message = (message if len(message) <= MAX_MESSAGE
                        else f"{message[:MAX_MESSAGE]}… ({len(message)} characters)")
        self.headers = headers or {}


class BadRequestError(OnnxLambdaError):
    status = 400
    type = "BadRequest"


class InvalidInputError(BadRequestError):
    """Well-formed request whose tensors do not match the model's signature."""

    type = "InvalidInput"


class FieldError(InvalidInputError):
    """A 400 naming the request field at fault (OpenAI's error shape carries it as ``param``)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param, self.code = param, code


class NotFoundError(OnnxLambdaError):
    status = 404
    type = "NotFound"


class MethodNotAllowedError(OnnxLambdaError):
    status = 405
    type = "MethodNotAllowed"


class PayloadTooLargeError(OnnxLambdaError):
    status = 413
    type = "PayloadTooLarge"


class UnsupportedMediaTypeError(OnnxLambdaError):
    status = 415
    type = "UnsupportedMediaType"


class NotAcceptableError(OnnxLambdaError):
    status = 406
    type = "NotAcceptable"


class InferenceError(OnnxLambdaError):
    status = 500
    type = "InferenceFailed"


class ResponseTooLargeError(OnnxLambdaError):
    """The answer would not fit Lambda's synchronous response limit (6 MB)."""

    status = 500
    type = "ResponseTooLarge"


class DeadlineExceededError(OnnxLambdaError):
    status = 504
    type = "DeadlineExceeded"


class ModelLoadError(RuntimeError):
    """Raised at init (import time): a missing, corrupt or mismatched model artifact.

    Not an ``OnnxLambdaError``: it must fail the init loudly, never become a response.
    """
