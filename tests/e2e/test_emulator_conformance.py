"""Conformance with the real Lambda Runtime Interface Emulator (the binary shipped in the
aws-sam-cli package, run natively): the same events through the RIE and through our
emulator give the same payloads and the same error documents.

Known, intended differences (docs/explanation/emulator.md): on a timeout the RIE answers the bare
text ``Task timed out after 1.00 seconds`` where Lambda (and we) answer a JSON error document
carrying that text; on an init error the RIE answers HTTP 502 where Lambda's Invoke API
(and we) answer 200 with ``X-Amz-Function-Error: Unhandled``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from benchmarks.servers import rie_binary
from onnx_lambda import server_process
from onnx_lambda.emulator import Emulator
from onnx_lambda.ports import free_port
from tests.e2e import emulator_support
from tests.e2e.emulator_support import HANDLERS

pytestmark = pytest.mark.e2e
emu = emulator_support.emu
RIE = rie_binary()


@pytest.fixture
def rie() -> Iterator[Callable[[str, bytes], tuple[int, bytes]]]:
    """``rie(handler, payload)`` -> (HTTP status, body) from a fresh RIE running ``handler``."""
    assert RIE is not None, "no runnable RIE (it ships in aws-sam-cli)"
    with contextlib.ExitStack() as servers:

        def invoke(handler: str, payload: bytes) -> tuple[int, bytes]:
            port = free_port()
            server = servers.enter_context(server_process.start(
                [str(RIE), "--runtime-interface-emulator-address", f"127.0.0.1:{port}",
                 sys.executable, "-m", "awslambdaric", handler], port=port, cwd=HANDLERS,
                env={"PYTHONPATH": str(HANDLERS), "AWS_LAMBDA_FUNCTION_TIMEOUT": "1"},
                timeout_s=20))
            url = f"{server.url}/2015-03-31/functions/function/invocations"
            try:
                with urllib.request.urlopen(url, data=payload, timeout=30) as response:
                    return response.status, response.read()
            except urllib.error.HTTPError as error:
                with error:  # (it holds the response and its connection)
                    return error.code, error.read()

        yield invoke


def ours(emu: Emulator, function: str, payload: bytes) -> tuple[str | None, bytes]:
    result = emu.call(emu.invoke(function, payload))
    return result.error_type, result.payload


def without_request_id(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "requestId"}


@pytest.mark.parametrize("value", [{"statusCode": 200, "body": "ok"}, "text", [1, 2.5, None],
                                   None, {"nested": {"ü": "ünïcode"}}])
def test_success_payloads_match(rie: Any, emu: Emulator, value: Any) -> None:
    payload = json.dumps({"value": value}).encode()
    status, theirs = rie("fns.value", payload)
    error, mine = ours(emu, "Value", payload)
    assert status == 200 and error is None
    assert json.loads(mine) == json.loads(theirs) == value


def test_unhandled_exception_documents_match(rie: Any, emu: Emulator) -> None:
    status, theirs = rie("fns.fail", b"{}")
    error, mine = ours(emu, "Fail", b"{}")
    assert status == 200 and error == "Boom"
    assert without_request_id(json.loads(mine)) == without_request_id(json.loads(theirs))
    assert set(json.loads(mine)) == {"errorMessage", "errorType", "requestId", "stackTrace"}


def test_init_error_documents_match(rie: Any, emu: Emulator) -> None:
    _status, theirs = rie("broken.handler", b"{}")
    error, mine = ours(emu, "Broken", b"{}")
    assert error == "RuntimeError"
    assert json.loads(mine) == json.loads(theirs)


def test_timeout_message_matches(rie: Any, emu: Emulator) -> None:
    payload = json.dumps({"seconds": 3}).encode()
    _status, theirs = rie("fns.sleep", payload)
    error, mine = ours(emu, "Sleep", payload)  # Timeout: 1 in the template
    assert error == "Sandbox.Timedout"
    assert theirs.decode() == "Task timed out after 1.00 seconds"
    assert json.loads(mine)["errorMessage"].endswith(theirs.decode())


def test_oversized_response_documents_match(rie: Any, emu: Emulator) -> None:
    payload = json.dumps({"bytes": 6_300_000}).encode()
    _status, theirs = rie("fns.big", payload)
    error, mine = ours(emu, "Big", payload)
    assert error == "Function.ResponseSizeTooLarge"
    assert json.loads(mine)["errorType"] == json.loads(theirs)["errorType"]
