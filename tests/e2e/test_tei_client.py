"""A real TEI client against the real handler behind ``template.yaml`` in the emulator:
``huggingface_hub.InferenceClient.feature_extraction`` pointed at ``/embed`` (how it talks to a
deployed text-embeddings-inference endpoint) gets the pipeline's vectors, and our TEI error
message in its exception."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.functional.test_openai_embeddings import build, expected

pytestmark = pytest.mark.e2e
hub = pytest.importorskip("huggingface_hub", reason="pip install 'onnx-lambda[examples]'")


@pytest.fixture(autouse=True)
def _online(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client may reach our loopback server even after an example build in this process
    set HF_HUB_OFFLINE=1 (``examples.minilm``), as a pytest-xdist worker's earlier module can."""
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Emulator, np.ndarray]]:
    folder, table = build(tmp_path_factory.mktemp("text"), "max_length=4")
    emulator = Emulator(root() / "template.yaml", port=0, log=None,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(folder)}})
    with emulator.running():
        yield emulator, table


def test_feature_extraction_gets_the_pipelines_vectors(
        served: tuple[Emulator, np.ndarray]) -> None:
    emulator, table = served
    client = hub.InferenceClient(model=f"{emulator.url}/embed")
    vectors = client.feature_extraction("hello world")
    np.testing.assert_allclose(vectors, [expected("hello world", table)], rtol=1e-5)
    cut = client.feature_extraction("the cat sat on the mat", truncate=True,
                                    truncation_direction="left")
    np.testing.assert_allclose(cut, [expected("sat on the mat", table)], rtol=1e-5)


def test_its_exception_carries_our_message(served: tuple[Emulator, np.ndarray]) -> None:
    client = hub.InferenceClient(model=f"{served[0].url}/embed")
    with pytest.raises(hub.errors.HfHubHTTPError, match="must have less than 4 tokens") as info:
        client.feature_extraction("the cat sat on the mat")
    assert info.value.response.status_code == 422

