"""TEI's ``POST /rerank`` over real HTTP: the real handler behind ``template.yaml`` in the
emulator, a cross-encoder built by ``build-model``. ``huggingface_hub``'s ``InferenceClient`` has
no rerank call (1.16: feature extraction, sentence similarity, text classification, …), so the
client is plain HTTP, as TEI's own docs show ``/rerank``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.functional.test_rerank_routes import QUERY, TEXTS, build, logit, sigmoid
from tests.functional.test_tei_routes import conforms

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, np.ndarray]]:
    folder, table = build(tmp_path_factory.mktemp("rerank"))
    emulator = Emulator(root() / "template.yaml", port=0, log=None,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(folder)}})
    with emulator.running():
        yield emulator.url, table


def test_rerank_over_http_answers_teis_shape(served: tuple[str, np.ndarray]) -> None:
    url, table = served
    body = {"query": QUERY, "texts": TEXTS, "return_text": True}
    conforms(body, "RerankRequest")
    answer = httpx.post(f"{url}/rerank", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    ranks = answer.json()
    conforms(ranks, "RerankResponse")
    want = [sigmoid(logit(QUERY, t, table)) for t in TEXTS]
    assert [r["index"] for r in ranks] == sorted(range(len(TEXTS)), key=lambda i: -want[i])
    assert [r["text"] for r in ranks] == [TEXTS[r["index"]] for r in ranks]
    np.testing.assert_allclose([r["score"] for r in ranks],
                               [want[r["index"]] for r in ranks], rtol=1e-5)
    assert int(answer.headers["x-compute-tokens"]) == sum(2 + len(t.split()) for t in TEXTS)


@pytest.mark.parametrize(("body", "status", "says"), [
    ({"query": QUERY, "texts": []}, 400, "`texts` cannot be empty"),
    ({"query": QUERY, "texts": ["cat"] * 10_000}, 422, "maximum allowed batch size"),
    ({"query": QUERY, "texts": ["x" * 1_000_000]}, 422, "characters"),
    ({"query": QUERY, "texts": [1, 2]}, 422, "list of strings"),
    ({"texts": ["cat"]}, 422, "missing field `query`"),
])
def test_bad_requests_are_4xx_in_teis_shape(served: tuple[str, np.ndarray], body: object,
                                            status: int, says: str) -> None:
    answer = httpx.post(f"{served[0]}/rerank", json=body, timeout=30)
    assert answer.status_code == status
    error = answer.json()
    conforms(error, "ErrorResponse")
    assert says in error["error"]
