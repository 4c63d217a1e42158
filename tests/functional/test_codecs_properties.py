"""Property-based tests of the codecs against real identity models: random tensors of every
dtype and shape round-trip through each wire format; random bytes only ever produce 4xx."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from handler.bootstrap import create
from handler.codecs.v2 import HEADER_LENGTH
from handler.model import DATATYPES
from handler.settings import Settings
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support.models import ONNX_TYPES, identity

RANK = 2
DTYPES = sorted(ONNX_TYPES)
V2_NAME = {np.dtype(d).name: name for name, d in DATATYPES.items() if name != "BYTES"}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder: Path = tmp_path_factory.mktemp("identity")
    built = {}
    for dtype in DTYPES:
        path = identity(folder / f"identity_{dtype}.onnx", dtype, RANK)
        service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(path)}))
        service.telemetry.stream = io.StringIO()
        built[dtype] = service
    return built


def arrays() -> st.SearchStrategy[np.ndarray]:
    shapes = hnp.array_shapes(min_dims=RANK, max_dims=RANK, min_side=0, max_side=5)
    return st.sampled_from(DTYPES).flatmap(lambda d: hnp.arrays(
        np.dtype(d), shapes, elements={"allow_nan": False, "allow_infinity": False}
        if np.dtype(d).kind == "f" else None))


def body_of(result: dict[str, Any]) -> bytes:
    raw = result["body"]
    return base64.b64decode(raw) if result["isBase64Encoded"] else raw.encode()


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(array=arrays())
def test_simple_json_round_trip(services: dict[str, Any], array: np.ndarray) -> None:
    service = services[array.dtype.name]
    result = service(http_event(body=json.dumps({"inputs": array.tolist()})), Context())
    if np.asarray(array.tolist()).ndim != RANK:  # e.g. shape (0, 0) is JSON [] (rank 1)
        assert result["statusCode"] == 400, result["body"]
        return
    assert result["statusCode"] == 200, result["body"]
    out = np.array(json.loads(result["body"])["outputs"]["y"], dtype=array.dtype)
    np.testing.assert_array_equal(out.reshape(array.shape), array)


@SETTINGS
@given(array=arrays(), binary=st.booleans())
def test_v2_round_trip(services: dict[str, Any], array: np.ndarray, binary: bool) -> None:
    service = services[array.dtype.name]
    item: dict[str, Any] = {"name": "x", "datatype": V2_NAME[array.dtype.name],
                            "shape": list(array.shape)}
    outputs = [{"name": "y", "parameters": {"binary_data": binary}}]
    if binary:
        item["parameters"] = {"binary_data_size": array.nbytes}
        header = json.dumps({"inputs": [item], "outputs": outputs}).encode()
        event = http_event(path=f"/v2/models/{service.model.name}/infer",
                           body=header + array.tobytes(),
                           headers={HEADER_LENGTH: str(len(header))})
    else:
        item["data"] = array.ravel().tolist()
        event = http_event(path=f"/v2/models/{service.model.name}/infer",
                           body=json.dumps({"inputs": [item], "outputs": outputs}))
    result = service(event, Context())
    assert result["statusCode"] == 200, result["body"]
    raw = body_of(result)
    if binary:
        cut = int(result["headers"][HEADER_LENGTH])
        out = np.frombuffer(raw[cut:], dtype=array.dtype.newbyteorder("<"))
    else:
        out = np.array(json.loads(raw)["outputs"][0]["data"], dtype=array.dtype)
    np.testing.assert_array_equal(out.reshape(array.shape), array)


@SETTINGS
@given(array=arrays())
def test_npy_round_trip(services: dict[str, Any], array: np.ndarray) -> None:
    service = services[array.dtype.name]
    buffer = io.BytesIO()
    np.save(buffer, array)
    result = service(http_event(body=buffer.getvalue(),
                                headers={"content-type": "application/x-npy"}), Context())
    assert result["statusCode"] == 200, result["body"]
    out = np.load(io.BytesIO(body_of(result)), allow_pickle=False)
    assert out.dtype == array.dtype
    np.testing.assert_array_equal(out, array)


PATHS = ["/predict", "/v2/models/identity_float32/infer"]
TYPES = ["application/json", "application/x-npy", "application/octet-stream", "", "text/plain"]


@SETTINGS
@given(body=st.binary(max_size=512), path=st.sampled_from(PATHS),
       content_type=st.sampled_from(TYPES), header_length=st.none() | st.integers(-5, 600))
def test_random_bytes_only_ever_4xx(services: dict[str, Any], body: bytes, path: str,
                                    content_type: str, header_length: int | None) -> None:
    headers = {"content-type": content_type}
    if header_length is not None:
        headers[HEADER_LENGTH] = str(header_length)
    result = services["float32"](http_event(path=path, body=body, headers=headers), Context())
    assert 400 <= result["statusCode"] < 500, result["body"]
    assert "error" in json.loads(result["body"])


@SETTINGS
@given(payload=st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4), max_leaves=20))
def test_random_json_only_ever_4xx_or_200(services: dict[str, Any], payload: Any) -> None:
    for body in (payload, {"inputs": payload}, {"inputs": {"x": payload}}):
        result = services["int64"](http_event(body=json.dumps(body)), Context())
        assert result["statusCode"] == 200 or 400 <= result["statusCode"] < 500, result["body"]
