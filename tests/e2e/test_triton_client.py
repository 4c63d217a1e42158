"""A real Open Inference Protocol V2 client (``tritonclient[http]``) against the real handler
behind the project's ``template.yaml``, served by the emulator with a tiny generated model:
health, metadata, JSON and binary inference, and our errors as the client reads them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from onnx_lambda.client import wire
from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.support import models

pytestmark = pytest.mark.e2e
http = pytest.importorskip("tritonclient.http", reason="pip install 'onnx-lambda[test]'")
utils = pytest.importorskip("tritonclient.utils")
ROOT = root()
MODEL = "multi_io"
A = np.array([[1.0, 2.0, 3.5], [0.5, 0.25, 4.0]], dtype=np.float32)
IDS = np.array([[1, 2], [3, -4]], dtype=np.int64)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    model = models.multi_io(tmp_path_factory.mktemp("model") / f"{MODEL}.onnx")
    emulator = Emulator(ROOT / "template.yaml", port=0, log=None,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}})
    with emulator.running():
        yield emulator


@pytest.fixture(scope="module")
def client(served: Emulator) -> Iterator[Any]:
    triton = http.InferenceServerClient(url=served.url.removeprefix("http://"),
                                        network_timeout=30.0)
    yield triton
    triton.close()


def test_health(client: Any) -> None:
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready(MODEL)
    assert not client.is_model_ready("no-such-model")


def test_metadata(client: Any) -> None:
    server = client.get_server_metadata()
    assert "binary_tensor_data" in server["extensions"]
    meta = client.get_model_metadata(MODEL)
    assert meta["name"] == MODEL
    assert meta["inputs"] == [{"name": "a", "datatype": "FP32", "shape": [-1, 3]},
                              {"name": "ids", "datatype": "INT64", "shape": [-1, 2]}]
    assert [o["name"] for o in meta["outputs"]] == ["total", "doubled"]


def inputs(binary: bool, a: np.ndarray = A, a_datatype: str = "FP32",
           ids: np.ndarray = IDS) -> list[Any]:
    first = http.InferInput("a", list(a.shape), a_datatype)
    first.set_data_from_numpy(a, binary_data=binary)
    second = http.InferInput("ids", list(ids.shape), "INT64")
    second.set_data_from_numpy(ids, binary_data=binary)
    return [first, second]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_infer(client: Any, binary: bool) -> None:
    outputs = [http.InferRequestedOutput(name, binary_data=binary)
               for name in ("total", "doubled")]
    result = client.infer(MODEL, inputs(binary), outputs=outputs, request_id="r-1")
    np.testing.assert_allclose(result.as_numpy("total"), A.sum(axis=1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_array_equal(result.as_numpy("doubled"), IDS * 2)
    assert result.get_response()["id"] == "r-1"


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_gzip_both_ways(client: Any, served: Emulator, binary: bool) -> None:
    """The client's own request and response compression: a gzip request body undone by the
    handler; a JSON answer of ~10 KB sent back gzip-compressed, as the client asked."""
    a = (np.arange(1200, dtype=np.float32) / 7).reshape(400, 3)
    ids = np.arange(800, dtype=np.int64).reshape(400, 2) - 400
    result = client.infer(MODEL, inputs(binary, a, ids=ids), outputs=[
        http.InferRequestedOutput("total", binary_data=False),
        http.InferRequestedOutput("doubled", binary_data=False)],
        request_compression_algorithm="gzip", response_compression_algorithm="gzip")
    np.testing.assert_allclose(result.as_numpy("total"), a.sum(axis=1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_array_equal(result.as_numpy("doubled"), ids * 2)
    # the answer the client decoded was gzip on the wire: the same request, seen raw
    body, headers = wire.v2_request({"a": a, "ids": ids}, binary=False)
    raw = httpx.post(f"{served.url}/v2/models/{MODEL}/infer", content=gzip.compress(body),
                     headers={**headers, "content-encoding": "gzip",
                              "accept-encoding": "gzip"}, timeout=30.0)
    assert raw.status_code == 200
    assert raw.headers["content-encoding"] == "gzip"
    assert raw.headers["vary"] == "accept-encoding"
    assert int(raw.headers["content-length"]) < len(raw.content) / 2  # httpx decoded it
    assert json.loads(raw.content)["outputs"][1]["data"] == (ids * 2).ravel().tolist()


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_errors_read_by_the_client_carry_our_message(client: Any, binary: bool) -> None:
    with pytest.raises(utils.InferenceServerException) as info:
        client.infer(MODEL, inputs(binary, A.astype(np.float64), "FP64"))
    assert info.value.status() == "400"
    assert info.value.message() == (
        "input 'a': expected datatype FP32, got FP64 (a: float32[batch, 3])")


def test_unknown_model_is_the_clients_404(client: Any) -> None:
    with pytest.raises(utils.InferenceServerException) as info:
        client.get_model_metadata("no-such-model")
    assert info.value.status() == "404"
    assert info.value.message() == (
        f"unknown model 'no-such-model'; this function serves {MODEL!r}")
