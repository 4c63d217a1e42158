"""``onnx_lambda.client.Client`` against the real handler behind ``template.yaml`` in the
emulator: V2 binary and JSON tensors and ``.npy`` round trips equal to onnxruntime's own
outputs, the timing fields, throttling retried then surfaced, our 4xx never retried."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from onnx_lambda.client import Client, ClientError, ThrottledError
from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.support import models

pytestmark = pytest.mark.e2e
ROOT = root()
FEEDS = {"a": np.array([[1.0, 2.0, 3.5], [0.5, 0.25, 4.0]], dtype=np.float32),
         "ids": np.array([[1, 2], [3, -4]], dtype=np.int64)}

SERVER_TIMING_ROUNDING_MS = 0.0005  # handler/telemetry.py writes dur=%.3f

def serve(model: Path, **options: Any) -> Emulator:
    return Emulator(ROOT / "template.yaml", port=0, log=None,
                    env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}}, **options)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.multi_io(tmp_path_factory.mktemp("model") / "multi_io.onnx")


@pytest.fixture(scope="module")
def served(model: Path) -> Iterator[Emulator]:
    with serve(model).running() as emulator:
        yield emulator


def expected(model: Path) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, FEEDS), strict=True))


def test_first_request_is_flagged_cold_then_warm(model: Path) -> None:
    with (serve(model, provisioned=0).running() as emulator,  # on demand: the first waits
          Client(emulator.url, model="multi_io") as client):  # no GET /health first
        first, second = client.infer(FEEDS).timing, client.infer(FEEDS).timing
    assert first.cold and "init" in first.server and "model-load" in first.server
    assert not second.cold and "init" not in second.server


@pytest.mark.parametrize("binary", [True, False])
def test_infer_outputs_equal_the_models(served: Emulator, model: Path, binary: bool) -> None:
    with Client(served.url) as client:
        result = client.infer(FEEDS, binary=binary)
    want = expected(model)
    assert set(result.outputs) == set(want)
    for name, array in want.items():
        assert result.outputs[name].dtype == array.dtype
        np.testing.assert_array_equal(result.outputs[name], array)
    assert result.request_id and result.status == 200


def test_binary_tensors_move_fewer_bytes_than_json(served: Emulator) -> None:
    big = {"a": np.random.default_rng(0).random((64, 3), dtype=np.float32),
           "ids": np.arange(128, dtype=np.int64).reshape(64, 2) * 1_000_003}
    with Client(served.url, gzip=False) as client:
        binary, text = client.infer(big).timing, client.infer(big, binary=False).timing
    assert binary.sent_bytes < text.sent_bytes and binary.received_bytes < text.received_bytes


def test_a_large_json_answer_comes_gzipped_and_counts_its_wire_bytes(served: Emulator) -> None:
    big = {"a": np.random.default_rng(1).random((300, 3), dtype=np.float32),
           "ids": np.arange(600, dtype=np.int64).reshape(300, 2)}
    with Client(served.url) as packed, Client(served.url, gzip=False) as plain:
        small, large = packed.infer(big, binary=False), plain.infer(big, binary=False)
    for name in ("total", "doubled"):
        np.testing.assert_array_equal(small.outputs[name], large.outputs[name])
    assert small.timing.received_bytes < large.timing.received_bytes * 0.6


def test_timing_fields_are_consistent(served: Emulator) -> None:
    with Client(served.url, keepalive=False) as fresh, Client(served.url) as pooled:
        timings = [fresh.infer(FEEDS).timing for _ in range(3)]
        pooled.infer(FEEDS)
        timings += [pooled.infer(FEEDS).timing for _ in range(3)]
    for t in timings:
        assert t.network is not None and t.network >= 0
        assert t.server["total"] + t.server.get("queue", 0.0) <= t.total
        # Server-Timing writes each duration with 3 decimals: the stages' sum may exceed the
        # total by their rounding (half a microsecond per figure), never by more
        stages = sum(t.server[s] for s in ("decode", "inference", "encode"))
        assert stages <= t.server["total"] + 4 * SERVER_TIMING_ROUNDING_MS
        assert t.connect + t.write + t.wait + t.read <= t.total
        assert t.protocol == "HTTP/1.1" and t.attempts == 1
    assert all(t.new_connection and t.connect > 0 for t in timings[:3])
    assert not any(t.new_connection or t.connect for t in timings[3:])


def test_our_4xx_is_raised_once_never_retried(served: Emulator) -> None:
    before = len(served.records())
    with (Client(served.url, retries=5, model="multi_io") as client,
          pytest.raises(ClientError) as caught):
        client.infer({"a": FEEDS["a"], "nope": FEEDS["ids"]})
    error = caught.value
    assert not isinstance(error, ThrottledError)
    assert error.status == 400 and error.type == "InvalidInput" and error.request_id
    assert error.attempts == 1 and len(served.records()) == before + 1


def test_predict_json_answer(served: Emulator, model: Path) -> None:
    with Client(served.url) as client:
        result = client.predict(FEEDS)  # arrays inside a mapping go as JSON lists
    for name, array in expected(model).items():
        np.testing.assert_array_equal(np.array(result.outputs["outputs"][name]), array)
    assert result.request_id


@pytest.fixture(scope="module")
def linear(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.linear(tmp_path_factory.mktemp("linear") / "linear.onnx")


@pytest.fixture(scope="module")
def single(linear: Path) -> Iterator[Emulator]:
    """One environment at most and none provisioned: a second caller is throttled."""
    with serve(linear, concurrency=1, provisioned=0).running() as emulator:
        yield emulator


def test_predict_npy_round_trip(single: Emulator, linear: Path) -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    with Client(single.url) as client:
        result = client.predict(x)
    session = ort.InferenceSession(str(linear), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(result.outputs, session.run(None, {"x": x})[0], rtol=1e-6)


def hold(emulator: Emulator, ms: int) -> threading.Thread:
    """Keep the only environment busy with a warm-up ping that holds it ``ms``."""
    function = next(iter(emulator.pools))
    thread = threading.Thread(target=emulator.call, args=(emulator.invoke(
        function, {"warmer": True, "holdMs": ms}, qualifier="live"),))
    thread.start()
    return thread


def busy(emulator: Emulator) -> bool:
    return any(pool.in_use for pool in emulator.pools.values())


def wait_busy(emulator: Emulator) -> None:
    for _ in range(200):
        if busy(emulator):
            return
        threading.Event().wait(0.01)
    raise AssertionError("the hold never started")


def test_throttle_is_retried_then_surfaced(single: Emulator) -> None:
    x = np.ones((1, 4), dtype=np.float32)
    thread = hold(single, 1000)
    wait_busy(single)
    try:
        with (Client(single.url, retries=2, backoff_s=0.01, backoff_cap_s=0.02) as client,
              pytest.raises(ThrottledError) as caught):
            client.predict(x)
    finally:
        thread.join()
    assert caught.value.status == 500 and caught.value.request_id is None
    assert caught.value.attempts == 3


def test_throttle_is_retried_until_it_passes(single: Emulator) -> None:
    x = np.ones((1, 4), dtype=np.float32)
    thread = hold(single, 300)
    wait_busy(single)
    try:
        with Client(single.url, retries=30, backoff_s=0.05, backoff_cap_s=0.1) as client:
            result = client.predict(x)
    finally:
        thread.join()
    assert result.timing.attempts > 1 and result.outputs.shape == (1, 2)


def test_embed_gets_the_vectors_as_float32_bytes(tmp_path: Path) -> None:
    """A text-embedding model: ``embed`` asks for ``encoding_format: base64`` and gives the
    same float32 vectors as the decimal answer, in well under half the bytes (headers included)."""
    from onnx_lambda.cli import main
    from tests.support import build_models

    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=384)
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    folder = tmp_path / "text"
    assert main(["build-model", str(source), "-o", str(folder), "--pipeline", "text-embedding",
                 "--file", str(tokenizer)]) == 0
    sentences = ["hello world", "the cat sat on the mat"]
    with serve(folder).running() as emulator, Client(emulator.url, gzip=False) as client:
        packed = client.embed(sentences)
        decimals = client.predict(sentences)
        single = client.embed("dog")
        top = client.predict(sentences, parameters={"encoding_format": "float"})
    assert packed.outputs.dtype == np.float32 and packed.outputs.shape == (2, 384)
    np.testing.assert_array_equal(packed.outputs,
                                  np.array(decimals.outputs["embeddings"], np.float32))
    assert single.outputs.shape == (1, 384)
    assert top.outputs == decimals.outputs
    assert packed.timing.received_bytes * 2 < decimals.timing.received_bytes
