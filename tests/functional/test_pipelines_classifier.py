"""The classifier pipeline behind the real handler, on generated models built by build-model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from handler.errors import ModelLoadError
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.support import build_models

LABELS = ("ant", "bee", "cat", "dog", "eel")


@pytest.fixture(scope="module")
def logits_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("classifier")
    source = build_models.mlp(folder / "mlp.onnx")
    labels = folder / "labels.txt"
    labels.write_text("\n".join(LABELS) + "\n")
    out = folder / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "classifier",
                 "--labels", str(labels), "--pipeline-option", "top_k=2"]) == 0
    return source, out


def batch(rows: int = 4) -> np.ndarray:
    return np.random.default_rng(3).standard_normal((rows, 32)).astype(np.float32)


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def logits(source: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0].astype(np.float64)


def test_softmax_top_k_and_labels(logits_model: tuple[Path, Path],
                                  make_service: Callable[..., Any]) -> None:
    source, folder = logits_model
    x = batch()
    body = make_service(folder)({"inputs": x.tolist()}, Context())
    probs = softmax(logits(source, x))
    assert len(body["predictions"]) == len(x)
    for prediction, row in zip(body["predictions"], probs, strict=True):
        best = int(row.argmax())
        assert prediction["label"] == LABELS[best]
        assert prediction["score"] == pytest.approx(row[best], rel=1e-5)
        assert len(prediction["top_k"]) == 2  # the manifest's default
        assert prediction["top_k"][0] == {"label": prediction["label"],
                                          "score": prediction["score"]}
        assert prediction["top_k"][1]["score"] <= prediction["score"]
    assert np.allclose(probs.sum(axis=1), 1.0)


def test_top_k_parameter(logits_model: tuple[Path, Path],
                         make_service: Callable[..., Any]) -> None:
    _, folder = logits_model
    service = make_service(folder)
    body = service({"inputs": batch(1).tolist(), "parameters": {"top_k": 50}}, Context())
    scores = [entry["score"] for entry in body["predictions"][0]["top_k"]]
    assert len(scores) == len(LABELS)  # capped at the number of classes
    assert scores == sorted(scores, reverse=True) and sum(scores) == pytest.approx(1.0)
    for bad in (0, -1, "3", 2.5, True):
        error = service({"inputs": batch(1).tolist(), "parameters": {"top_k": bad}}, Context())
        assert error["error"]["type"] == "InvalidInput", bad


def test_probabilities_are_not_softmaxed_again(tmp_path: Path,
                                               make_service: Callable[..., Any]) -> None:
    source = build_models.probabilities(tmp_path / "probs.onnx")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "classifier"]) == 0
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    body = make_service(out)({"inputs": x.tolist()}, Context())
    for prediction, row in zip(body["predictions"], expected, strict=True):
        assert prediction["label"] == str(int(row.argmax()))  # no labels: class indices
        assert prediction["score"] == pytest.approx(float(row.max()), rel=1e-5)


def test_bad_input_is_a_400_and_the_service_stays_healthy(
        logits_model: tuple[Path, Path], make_service: Callable[..., Any]) -> None:
    _, folder = logits_model
    service = make_service(folder)
    assert service({"inputs": [[1.0, 2.0]]}, Context())["error"]["type"] == "InvalidInput"
    assert "predictions" in service({"inputs": batch(1).tolist()}, Context())


def test_label_count_must_match_the_classes(tmp_path: Path,
                                            make_service: Callable[..., Any]) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_text("only\ntwo\n")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "classifier",
                 "--labels", str(labels)]) == 0
    with pytest.raises(ModelLoadError, match="2 labels for 5 classes"):
        make_service(out)


def test_the_answer_text_is_what_the_encoder_writes_for_the_answer(
        logits_model: tuple[Path, Path], make_service: Callable[..., Any]) -> None:
    """The graph's answer carries its own text (no encoder walk): byte for byte the plain
    encoding of the same answer, for every batch size and k, over HTTP and direct."""
    service = make_service(logits_model[1])
    for rows, k in ((1, 1), (3, 2), (2, 1)):
        inputs = batch(rows).tolist() if rows else []
        event = {"version": "2.0", "rawPath": "/predict", "requestContext": {
            "http": {"method": "POST", "path": "/predict"}}, "headers": {},
            "body": json.dumps({"inputs": inputs, "parameters": {"top_k": k}})}
        answer = service(event, Context())
        assert answer["statusCode"] == 200, answer
        direct = service({"inputs": inputs, "parameters": {"top_k": k}}, Context())
        assert answer["body"] == json.dumps(direct, separators=(",", ":"))
        assert len(direct["predictions"]) == rows
        assert all(len(p["top_k"]) == k for p in direct["predictions"])


def test_a_text_classifier_takes_sentences_through_its_tokenizer(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    """A sequence classifier (input_ids, attention_mask → logits) built with its tokenizer
    takes text: each sentence tokenized, the batch padded, one prediction per sentence, the
    labels of the softmaxed logits; token ids still go as tensors; no tokenizer, numbers only."""
    source, table, head = build_models.text_classifier(tmp_path / "text.onnx")
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    labels = tmp_path / "labels.txt"
    labels.write_text("negative\nneutral\npositive\n")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "classifier",
                 "--labels", str(labels), "--file", str(tokenizer)]) == 0
    service = make_service(out)
    sentences = ["hello world", "the cat sat on the mat", "dog"]
    body = service({"inputs": sentences, "parameters": {"top_k": 3}}, Context())
    for sentence, prediction in zip(sentences, body["predictions"], strict=True):
        ids = [build_models.VOCAB[w] for w in sentence.split()]
        expected = softmax((table[ids].mean(axis=0) @ head)[np.newaxis])[0]
        order = np.argsort(-expected)
        names = ("negative", "neutral", "positive")
        assert [e["label"] for e in prediction["top_k"]] == [names[i] for i in order]
        np.testing.assert_allclose([e["score"] for e in prediction["top_k"]],
                                   expected[order], rtol=1e-5)
    single = service({"inputs": "hello world"}, Context())
    first = single["predictions"][0]
    assert (first["label"], first["score"]) == (body["predictions"][0]["label"],
                                                body["predictions"][0]["score"])
    ids = [[build_models.VOCAB["hello"], build_models.VOCAB["world"]]]
    tensors = service({"inputs": {"input_ids": ids, "attention_mask": [[1, 1]]}}, Context())
    assert tensors["predictions"][0]["label"] == first["label"]
    bad = service({"inputs": ["fine", 3]}, Context())
    assert bad["error"]["type"] == "InvalidInput"
    assert service.example_inputs() is not None and service.warmup_status == "ok"
    without = tmp_path / "numbers-only"
    assert main(["build-model", str(source), "-o", str(without), "--pipeline",
                 "classifier"]) == 0
    refused = make_service(without)({"inputs": "hello world"}, Context())
    assert refused["error"]["type"] in ("InvalidInput", "BadRequest")
