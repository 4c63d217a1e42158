"""Request signing: SigV4 with botocore's signer (``AuthMode=iam`` endpoints) or a bearer
token (``jwt``). Signed per attempt: a SigV4 signature carries its time."""

from __future__ import annotations

import re
from typing import Any, Protocol
from urllib.parse import urlsplit

# {api}.execute-api.{region}.amazonaws.com; Function URLs: {id}.lambda-url.{region}.on.aws
_HOSTS = (re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com$"),
          re.compile(r"\.lambda-url\.([a-z0-9-]+)\.on\.aws$"))


class Signer(Protocol):
    def __call__(self, method: str, url: str, body: bytes,
                 headers: dict[str, str]) -> dict[str, str]: ...


class Bearer:
    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    def __call__(self, method: str, url: str, body: bytes,
                 headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "authorization": self._value}


class SigV4:
    """botocore's ``SigV4Auth``: service ``execute-api`` for API Gateway, ``lambda`` for
    Function URLs; the region from the host name, else the AWS configuration."""

    def __init__(self, url: str, *, region: str | None = None, service: str | None = None,
                 credentials: Any = None) -> None:
        import botocore.session

        host = urlsplit(url).hostname or ""
        session = botocore.session.get_session()
        found = next((m.group(1) for p in _HOSTS if (m := p.search(host))), None)
        self.region = region or found or session.get_config_variable("region") or "us-east-1"
        self.service = service or ("lambda" if ".lambda-url." in host else "execute-api")
        self.credentials = credentials or session.get_credentials()
        if self.credentials is None:
            raise ValueError("auth='iam' needs AWS credentials (environment, profile or role)")

    def __call__(self, method: str, url: str, body: bytes,
                 headers: dict[str, str]) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(self.credentials, self.service, self.region).add_auth(request)
        return dict(request.headers.items())


def signer(auth: str | Signer | None, url: str, region: str | None) -> Signer | None:
    if auth is None or callable(auth):
        return auth
    if auth == "iam":
        return SigV4(url, region=region)
    return Bearer(auth)
