"""A real Open Inference Protocol V2 client (``tritonclient[http]``) against the real handler
behind the project's ``template.yaml``, served by the emulator with a tiny generated model:
health, metadata, JSON and binary inference, and our errors as the client reads them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

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
                        parameter_overrides={"ModelPath": str(model)})
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


def inputs(binary: bool, a: np.ndarray = A, a_datatype: str = "FP32") -> list[Any]:
    first = http.InferInput("a", list(a.shape), a_datatype)
    first.set_data_from_numpy(a, binary_data=binary)
    second = http.InferInput("ids", list(IDS.shape), "INT64")
    second.set_data_from_numpy(IDS, binary_data=binary)
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
