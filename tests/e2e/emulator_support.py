"""Shared pieces of the emulator's end-to-end tests: the test template (tiny handlers in
``tests/e2e/handlers``), an emulator running in a background thread, a boto3 client."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from onnx_lambda.emulator import Emulator

HANDLERS = Path(__file__).parent / "handlers"
TEMPLATE = HANDLERS / "template.yaml"
# lambda_client's clients, closed after the test that made them (conftest.py): a client left to
# the garbage collector leaves its pooled sockets unclosed (a ResourceWarning, an error here)
CLIENTS: list[Any] = []


OPENAI_KEY = "sk-local-test"  # the bearer key serving_with_key's function requires


def serving_with_key(model: Path, **options: Any) -> Emulator:
    """The shipped template.yaml with InferenceFunction serving ``model`` behind the bearer key
    ``OPENAI_KEY`` (``ONNX_LAMBDA_API_KEYS``), as OpenAI-style clients call it."""
    from onnx_lambda.source_tree import root

    return Emulator(root() / "template.yaml", port=0, log=None, **options, env_vars={
        "InferenceFunction": {"ONNX_LAMBDA_MODEL": str(model), "ONNX_LAMBDA_API_KEYS": OPENAI_KEY}})


def openai_sdk(emulator: Emulator, key: str = OPENAI_KEY) -> Any:
    """The real ``openai`` SDK at the emulator's ``/v1`` routes; no retries, so a test sees the
    first answer (the SDK retries 5xx and 429 by itself)."""
    import openai

    return openai.OpenAI(base_url=f"{emulator.url}/v1", api_key=key, max_retries=0)


def lambda_client(url: str) -> Any:
    import boto3
    from botocore.config import Config

    client = boto3.client("lambda", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="x",
                          config=Config(retries={"max_attempts": 0}, read_timeout=30))
    CLIENTS.append(client)
    return client


def close_clients(keep: int = 0) -> None:
    """Close the clients made since the first ``keep``."""
    while len(CLIENTS) > keep:
        CLIENTS.pop().close()


def call(url: str, method: str = "GET", body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:  # (it holds the response and its connection)
            return error.code, error.headers, error.read()


def children() -> list[psutil.Process]:
    return psutil.Process().children(recursive=True)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    """The test template's functions on a free port (function logs off)."""
    emulator = Emulator(TEMPLATE, port=0, log=None, concurrency=2)
    with emulator.running():
        yield emulator
    assert not children(), "environments left running after stop()"


@pytest.fixture(scope="module")
def client(emu: Emulator) -> Iterator[Any]:
    made = len(CLIENTS)
    yield lambda_client(emu.url)
    close_clients(made)
