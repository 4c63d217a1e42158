"""Request signing of ``onnx_lambda.client``: SigV4 through botocore's signer, checked by
recomputing the signature from what would be sent (botocore's canonical request and string
to sign), for a fixed clock; and the bearer token."""

from __future__ import annotations

import datetime

import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from onnx_lambda.client.auth import Bearer, SigV4, signer

URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/v2/models/m/infer"
CREDS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
BODY = b'{"inputs":[]}'
NOW = datetime.datetime(2026, 12, 1, 10, 0, 0)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: NOW)


def sign(url: str = URL, body: bytes = BODY) -> dict[str, str]:
    return SigV4(url, credentials=CREDS)("POST", url, body, {"content-type": "application/json"})


def verify(headers: dict[str, str], url: str, body: bytes, region: str, service: str) -> bool:
    """Recompute the signature of the request as sent (a verifier's view)."""
    authorization = headers["Authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    sent = AWSRequest(method="POST", url=url, data=body,
                      headers={k: v for k, v in headers.items() if k.lower() in signed})
    sent.context["timestamp"] = headers["X-Amz-Date"]
    auth = SigV4Auth(CREDS, service, region)
    string_to_sign = auth.string_to_sign(sent, auth.canonical_request(sent))
    return authorization.endswith("Signature=" + auth.signature(string_to_sign, sent))


def test_sigv4_headers_for_api_gateway() -> None:
    headers = sign()
    assert headers["X-Amz-Date"] == "20261201T100000Z"
    assert headers["X-Amz-Security-Token"] == "session-token"
    assert headers["Authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/eu-west-1/execute-api/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=")
    assert verify(headers, URL, BODY, "eu-west-1", "execute-api")


def test_sigv4_is_stable_for_a_fixed_clock_and_covers_the_body() -> None:
    assert sign() == sign()
    other = sign(body=BODY + b" ")
    assert other["Authorization"] != sign()["Authorization"]
    assert not verify(other, URL, BODY, "eu-west-1", "execute-api")


def test_sigv4_function_url_signs_for_lambda() -> None:
    url = "https://xyz.lambda-url.ap-south-1.on.aws/predict"
    headers = sign(url)
    assert "/ap-south-1/lambda/aws4_request" in headers["Authorization"]
    assert verify(headers, url, BODY, "ap-south-1", "lambda")


def test_iam_without_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: object) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(ValueError, match="credentials"):
        signer("iam", URL, None)


def test_bearer_token() -> None:
    made = signer("tok", URL, None)
    assert isinstance(made, Bearer)
    assert made("GET", URL, b"", {"a": "b"}) == {"a": "b", "authorization": "Bearer tok"}
