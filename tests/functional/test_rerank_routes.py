"""Cross-encoder rerankers: ``build-model`` recognises one, the ``rerank`` pipeline scores its
pairs (``/predict``) and TEI's ``POST /rerank`` answers them in TEI's shapes (checked against
TEI's OpenAPI schemas, tests/support/tei_openapi.json), on a word-level cross-encoder whose
logit is the dot product of the query's and the passage's summed rows of a known table."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.manifest import Manifest
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.functional.test_openai_embeddings import build as build_embedder
from tests.functional.test_tei_routes import call, conforms
from tests.support import build_models

MAX_LENGTH = 8
MAX_TEXTS = 6
QUERY = "the cat"
TEXTS = ["the cat sat on the mat", "dog runs fast", "hello world", "cat", "the dog sat"]


def build(folder: Path, *args: str, classes: int = 1) -> tuple[Path, np.ndarray]:
    source, table = build_models.cross_encoder(folder / "cross.onnx", classes=classes)
    tokenizer = build_models.word_tokenizer(folder / "tokenizer.json")
    out = folder / "model"
    assert main(["build-model", str(source), "-o", str(out), "--file", str(tokenizer),
                 "--name", "pairs", "--pipeline-option", f"max_length={MAX_LENGTH}",
                 "--pipeline-option", "max_batch=2", "--pipeline-option",
                 f"max_texts={MAX_TEXTS}", *args]) == 0
    return out, table


def logit(query: str, text: str, table: np.ndarray) -> float:
    def rows(words: list[str]) -> np.ndarray:
        ids = [build_models.VOCAB.get(w, build_models.VOCAB["[UNK]"]) for w in words]
        return table[ids].sum(axis=0)

    return float(rows(query.split()) @ rows(text.split()))


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@pytest.fixture(scope="module")
def reranker(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    return build(tmp_path_factory.mktemp("rerank"))


@pytest.fixture
def service(reranker: tuple[Path, np.ndarray], make_service: Callable[..., Any]) -> Any:
    return make_service(reranker[0])


def test_build_model_recognises_a_cross_encoder(reranker: tuple[Path, np.ndarray]) -> None:
    manifest = Manifest.load(reranker[0])
    assert manifest.pipeline == "rerank"
    assert manifest.pipeline_options["output"] == "logits"
    assert "tokenizer.json" in manifest.files
    assert manifest.metadata["build"]["accuracy"]["compared"] == ["score (cosine)",
                                                                  "top3 (agreement)"]


@pytest.mark.parametrize(("args", "with_tokenizer", "pipeline"), [
    ((), False, "tensor"),  # no tokenizer beside it: not a text model
    (("--pipeline", "tensor"), True, "tensor"),  # the command line decides
])
def test_without_its_tokenizer_or_when_told_it_is_not_a_reranker(
        tmp_path: Path, args: tuple[str, ...], with_tokenizer: bool, pipeline: str) -> None:
    source, _ = build_models.cross_encoder(tmp_path / "cross.onnx")
    files = ["--file", str(build_models.word_tokenizer(tmp_path / "tokenizer.json"))]
    assert main(["build-model", str(source), "-o", str(tmp_path / "out"),
                 *(files if with_tokenizer else []), *args]) == 0
    assert Manifest.load(tmp_path / "out").pipeline == pipeline


def test_a_two_class_model_with_labels_is_a_classifier(tmp_path: Path) -> None:
    source, _ = build_models.cross_encoder(tmp_path / "cross.onnx", classes=2)
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    labels = tmp_path / "labels.txt"
    labels.write_text("negative\npositive\n")
    assert main(["build-model", str(source), "-o", str(tmp_path / "out"), "--file",
                 str(tokenizer), "--labels", str(labels)]) == 0
    assert Manifest.load(tmp_path / "out").pipeline == "tensor"


def test_asking_rerank_of_a_model_without_a_score_output_is_a_usage_error(
        tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", classes=5)  # logits [batch, 5]
    assert main(["build-model", str(source), "-o", str(tmp_path / "out"), "--pipeline",
                 "rerank"]) == 2
    assert not (tmp_path / "out").exists()


def test_rerank_answers_sigmoid_scores_best_first_in_teis_shape(
        service: Any, reranker: tuple[Path, np.ndarray]) -> None:
    body = {"query": QUERY, "texts": TEXTS, "return_text": True}
    status, answer = call(service, "/rerank", body, request_schema="RerankRequest")
    assert status == 200
    conforms(answer, "RerankResponse")
    want = [sigmoid(logit(QUERY, t, reranker[1])) for t in TEXTS]
    assert [r["index"] for r in answer] == sorted(range(len(TEXTS)), key=lambda i: -want[i])
    for rank in answer:
        assert rank["text"] == TEXTS[rank["index"]]
        assert rank["score"] == pytest.approx(want[rank["index"]], rel=1e-5)
    status, raw = call(service, "/rerank", {"query": QUERY, "texts": TEXTS, "raw_scores": True})
    assert status == 200 and all("text" not in r for r in raw)
    assert {r["index"]: r["score"] for r in raw} == pytest.approx(
        {i: logit(QUERY, t, reranker[1]) for i, t in enumerate(TEXTS)}, rel=1e-5)


def test_many_texts_run_in_batches_and_keep_their_indices(
        service: Any, reranker: tuple[Path, np.ndarray]) -> None:
    """max_batch is 2: six texts of different lengths run as three batches sorted by length."""
    texts = ["the cat sat on the mat", "dog", "hello world", "cat sat", "the", "fast dog runs"]
    status, answer = call(service, "/rerank", {"query": QUERY, "texts": texts,
                                               "raw_scores": True})
    assert status == 200
    assert {r["index"]: r["score"] for r in answer} == pytest.approx(
        {i: logit(QUERY, t, reranker[1]) for i, t in enumerate(texts)}, rel=1e-5)


def test_two_logits_score_the_relevant_class(tmp_path: Path,
                                            make_service: Callable[..., Any]) -> None:
    folder, table = build(tmp_path, classes=2)
    assert Manifest.load(folder).pipeline == "rerank"
    service = make_service(folder)
    status, answer = call(service, "/rerank", {"query": QUERY, "texts": TEXTS})
    assert status == 200
    # logits [-s, s]: softmax's class 1 is sigmoid(2s); raw, the difference 2s
    assert {r["index"]: r["score"] for r in answer} == pytest.approx(
        {i: sigmoid(2 * logit(QUERY, t, table)) for i, t in enumerate(TEXTS)}, rel=1e-5)
    _, raw = call(service, "/rerank", {"query": QUERY, "texts": TEXTS, "raw_scores": True})
    assert {r["index"]: r["score"] for r in raw} == pytest.approx(
        {i: 2 * logit(QUERY, t, table) for i, t in enumerate(TEXTS)}, rel=1e-5)


def test_predict_ranks_the_pairs(service: Any, reranker: tuple[Path, np.ndarray]) -> None:
    texts = TEXTS[:2]
    answer = service({"inputs": {"query": QUERY, "texts": texts}}, Context())
    want = [sigmoid(logit(QUERY, t, reranker[1])) for t in texts]
    assert [r["index"] for r in answer["ranks"]] == sorted(range(2), key=lambda i: -want[i])
    assert {r["index"]: r["score"] for r in answer["ranks"]} == pytest.approx(
        dict(enumerate(want)), rel=1e-5)
    assert answer["tokens"] == [2 + len(t.split()) for t in texts]


def test_long_pairs_are_refused_unless_truncated_from_the_side_asked(
        service: Any, reranker: tuple[Path, np.ndarray]) -> None:
    text = "hello world the dog runs fast on the mat"  # 2 + 9 words: over MAX_LENGTH tokens
    status, answer = call(service, "/rerank", {"query": QUERY, "texts": [text]})
    assert status == 422 and answer["error_type"] == "Validation"
    assert answer["error"] == ("Input validation error: `inputs` must have less than "
                               f"{MAX_LENGTH} tokens. Given: 11")
    words = text.split()  # longest first: the passage loses 3 words, the query none
    for direction, kept in (("Right", words[:6]), ("Left", words[-6:])):
        status, answer = call(service, "/rerank", {
            "query": QUERY, "texts": [text], "truncate": True, "raw_scores": True,
            "truncation_direction": direction}, request_schema="RerankRequest")
        assert status == 200
        assert answer[0]["score"] == pytest.approx(logit(QUERY, " ".join(kept), reranker[1]),
                                                   rel=1e-5)


def test_info_describes_a_reranker(service: Any) -> None:
    status, info = call(service, "/info", method="GET")
    assert status == 200
    conforms(info, "Info")
    assert info["model_type"] == {"reranker": {"id2label": {"0": "LABEL_0"},
                                               "label2id": {"LABEL_0": 0}}}
    assert info["max_client_batch_size"] == MAX_TEXTS and info["max_input_length"] == MAX_LENGTH


@pytest.mark.parametrize(("body", "status", "error_type", "says"), [
    ({"query": QUERY, "texts": []}, 400, "Empty", "`texts` cannot be empty"),
    ({"query": QUERY, "texts": ["cat"] * 10_000}, 422, "Validation",
     f"batch size 10000 > maximum allowed batch size {MAX_TEXTS}"),
    ({"query": QUERY, "texts": ["x" * 1_000_000]}, 422, "Validation",
     f"must have less than {MAX_LENGTH * 250} characters. Given: {1_000_000 + len(QUERY)}"),
    ({"query": "x" * 1_000_000, "texts": ["cat"]}, 422, "Validation", "characters"),
    ({"texts": ["cat"]}, 422, "Validation", "missing field `query`"),
    ({"query": QUERY}, 422, "Validation", "missing field `texts`"),
    ({"query": 5, "texts": ["cat"]}, 422, "Validation", "`query` must be a string"),
    ({"query": QUERY, "texts": "cat"}, 422, "Validation", "`texts` must be a list of strings"),
    ({"query": QUERY, "texts": ["cat", 5]}, 422, "Validation", "list of strings"),
    ({"query": QUERY, "texts": ["cat"], "raw_scores": "yes"}, 422, "Validation",
     "true or false"),
    ({"query": QUERY, "texts": ["cat"], "truncation_direction": "up"}, 422, "Validation",
     "'left' or 'right'"),
    ({"query": QUERY, "texts": ["cat"], "inputs": "x"}, 422, "Validation",
     "unknown field `inputs`"),
    ([QUERY, "cat"], 422, "Validation", "JSON object"),
    ("{", 400, "Validation", "malformed JSON"),
])
def test_bad_requests_answer_teis_error_shape_and_leave_the_service_healthy(
        service: Any, body: Any, status: int, error_type: str, says: str) -> None:
    got, answer = call(service, "/rerank", body)
    assert (got, answer["error_type"]) == (status, error_type)
    assert says in answer["error"]
    assert call(service, "/rerank", {"query": QUERY, "texts": ["cat"]})[0] == 200


def test_a_nan_score_is_teis_424_not_a_500(tmp_path: Path,
                                          make_service: Callable[..., Any]) -> None:
    import onnx

    source, table = build_models.cross_encoder(tmp_path / "cross.onnx")
    model = onnx.load(str(source))
    [weights] = [w for w in model.graph.initializer if w.name == "table"]
    table[build_models.VOCAB["dog"]] = np.nan
    weights.CopyFrom(onnx.numpy_helper.from_array(table, "table"))
    onnx.save(model, str(source))
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    assert main(["build-model", str(source), "-o", str(tmp_path / "model"), "--file",
                 str(tokenizer)]) == 0
    service = make_service(tmp_path / "model")
    status, answer = call(service, "/rerank", {"query": QUERY, "texts": ["cat", "dog"]})
    assert (status, answer["error_type"]) == (424, "Backend")
    assert "NaN" in answer["error"]


def test_predict_refuses_bad_inputs_with_a_400(service: Any) -> None:
    for inputs, parameters in (("the cat", {}), ({"query": QUERY, "texts": TEXTS}, {}),
                               ({"query": QUERY, "texts": ["cat"]}, {"raw_scores": 1})):
        result = service({"inputs": inputs, "parameters": parameters}, Context())
        assert result["error"]["type"] == "InvalidInput", result


def test_the_routes_of_another_kind_of_model_say_so(
        service: Any, tmp_path: Path, make_service: Callable[..., Any]) -> None:
    status, answer = call(service, "/embed", {"inputs": "cat"})
    assert (status, answer["error_type"]) == (424, "Backend")
    assert "rerank model" in answer["error"]
    result = service(json.loads(json.dumps(_openai_event())), Context())
    assert result["statusCode"] == 400
    assert "rerank model" in json.loads(result["body"])["error"]["message"]
    embedder = make_service(build_embedder(tmp_path)[0])
    status, answer = call(embedder, "/rerank", {"query": QUERY, "texts": ["cat"]})
    assert (status, answer["error_type"]) == (424, "Backend")
    assert "not a re-ranker" in answer["error"]


def _openai_event() -> dict[str, Any]:
    from tests.functional.test_handler_errors import http_event

    return http_event("POST", "/v1/embeddings", json.dumps({"input": "cat", "model": "pairs"}))
