"""Bearer keys checked by the handler (``ONNX_LAMBDA_API_KEYS``), for clients that can send a
key but not sign a request or fetch a JWT: the ``openai`` SDK sends ``Authorization: Bearer
<api_key>`` on every request. Imported only when keys are set."""

from __future__ import annotations

import hmac

from handler.errors import OnnxLambdaError


class UnauthorizedError(OnnxLambdaError):
    status = 401
    type = "Unauthorized"
    code = "invalid_api_key"  # OpenAI's ``code`` for the same answer (handler.api.openai.errors)
    param = None


def check(keys: tuple[str, ...], authorization: str | None) -> None:
    """Raise 401 unless ``authorization`` is ``Bearer <one of keys>``."""
    if not authorization:
        raise UnauthorizedError("missing API key: send Authorization: Bearer <key>",
                                headers={"www-authenticate": "Bearer"})
    scheme, _, given = authorization.partition(" ")
    token = given.strip().encode()
    # every key compared, in constant time each: the answer's timing says nothing of which
    matched = [hmac.compare_digest(token, key.encode()) for key in keys]
    if scheme.lower() != "bearer" or not any(matched):
        raise UnauthorizedError("invalid API key", headers={"www-authenticate": "Bearer"})
