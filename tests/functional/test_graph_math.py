"""The math build-model appends to the graph equals the pipelines' math (numpy reference here),
across opsets; the served responses keep their shape; older artifacts fall back to Python."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from handler.manifest import Manifest
from handler.pipelines import classifier as classifier_pipeline
from onnx_lambda.build_model import graph_math
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.support import build_models


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def top_k(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-probs, axis=1, kind="stable")[:, :k]  # ties: lower index first
    return np.take_along_axis(probs, order, axis=1), order


def append_classifier(source: Path, options: dict[str, Any],
                      x: np.ndarray) -> graph_math.Appended:
    model = onnx.load(str(source))
    return graph_math.for_pipeline(model, "classifier", options, {}, run(model, {"x": x}))


@pytest.mark.parametrize("opset", [11, 13, 17, 18])
def test_softmax_and_top_k_equal_numpy(tmp_path: Path, opset: int) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", opset=opset)
    x = np.random.default_rng(0).standard_normal((6, 32)).astype(np.float32)
    appended = append_classifier(source, {"top_k": 3}, x)
    assert appended.note["appended"] == ["softmax", "top_k"]
    assert appended.note["probabilities"] == "measured on the samples"
    got = run(appended.model, {"x": x})
    probs = softmax(run(onnx.load(str(source)), {"x": x})["logits"].astype(np.float64))
    names = appended.outputs
    np.testing.assert_allclose(got[names["probabilities"]], probs, rtol=1e-5, atol=1e-7)
    scores, indices = top_k(probs, 3)
    np.testing.assert_array_equal(got[names["indices"]], indices)
    assert got[names["indices"]].dtype == np.int64
    np.testing.assert_allclose(got[names["scores"]], scores, rtol=1e-5, atol=1e-7)
    assert "logits" in got  # the model's own output stays


def test_k_is_capped_at_the_class_count(tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", classes=4)
    x = np.ones((2, 32), dtype=np.float32)
    appended = append_classifier(source, {"top_k": 50}, x)
    assert appended.note["top_k"] == 4
    assert run(appended.model, {"x": x})[appended.outputs["indices"]].shape == (2, 4)


def scores_model(path: Path, classes: int) -> Path:
    """x: float32[batch, classes] → Softmax(x): ties in, ties out."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", classes])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes])
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["probs"], axis=-1)],
                              "ties", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def test_ties_keep_the_lower_index_first_in_graph_and_python(tmp_path: Path) -> None:
    x = np.array([[1, 3, 3, 0, 3, 1], [2, 2, 2, 2, 2, 2], [0, 1, 0, 1, 0, 1]], np.float32)
    appended = append_classifier(scores_model(tmp_path / "ties.onnx", 6), {"top_k": 4}, x)
    assert appended.note["appended"] == ["top_k"]  # a Softmax output: no second softmax
    assert appended.outputs["probabilities"] == "probs"
    got = run(appended.model, {"x": x})
    expected = [[1, 2, 4, 0], [0, 1, 2, 3], [1, 3, 5, 0]]
    assert got[appended.outputs["indices"]].tolist() == expected
    python = [[i for i, _ in classifier_pipeline.top_k(row, 4)] for row in got["probs"].tolist()]
    assert python == expected


def test_probabilities_detection_option_and_measurement(tmp_path: Path) -> None:
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    source = build_models.probabilities(tmp_path / "probs.onnx")
    assert append_classifier(source, {}, x).note["probabilities"] == "graph"
    forced = append_classifier(source, {"probabilities": False}, x)
    assert forced.note == {**forced.note, "appended": ["softmax", "top_k"],
                           "probabilities": "pipeline option"}
    # Probabilities made by ops the graph check does not know: measured on the samples.
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])]
    outputs = [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", 4])]
    nodes = [helper.make_node("Abs", ["x"], ["a"]),
             helper.make_node("ReduceSum", ["a", "axes"], ["s"], keepdims=1),
             helper.make_node("Div", ["a", "s"], ["p"])]
    axes = onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")
    graph = helper.make_graph(nodes, "l1", inputs, outputs, [axes])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "l1.onnx")
    measured = append_classifier(tmp_path / "l1.onnx", {}, x[:, :4])
    assert measured.note["probabilities"] == "measured on the samples"
    assert measured.note["appended"] == ["top_k"]


def test_a_zipmap_classifier_gets_its_probability_tensor(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 4)).astype(np.float32)
    fitted = LogisticRegression().fit(x, (x[:, 0] > 0).astype(int) + (x[:, 1] > 0))
    onnx_model = convert_sklearn(fitted, initial_types=[("x", FloatTensorType([None, 4]))])
    for entry in onnx_model.opset_import:  # skl2onnx picks the oldest opset that suffices
        entry.version = 17 if entry.domain == "" else entry.version
    source = tmp_path / "zipmap.onnx"
    source.write_bytes(onnx_model.SerializeToString())
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "classifier"]) == 0
    manifest = Manifest.load(out)
    assert manifest.metadata["graph_math"]["appended"] == ["top_k"]
    body = make_service(out)({"inputs": x[:5].tolist()}, Context())
    expected = fitted.predict_proba(x[:5])
    for prediction, row in zip(body["predictions"], expected, strict=True):
        assert prediction["label"] == str(int(row.argmax()))
        assert prediction["score"] == pytest.approx(row.max(), rel=1e-4)


def numpy_embedding(hidden: np.ndarray, mask: np.ndarray, *, pooling: str = "mean",
                    normalize: bool = True) -> np.ndarray:
    weights = mask.astype(np.float32)[:, :, np.newaxis]
    if pooling == "mean":
        vectors = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    else:
        vectors = hidden[:, 0]
    if normalize:
        vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    return vectors


def padded_batch() -> dict[str, np.ndarray]:
    ids = np.array([[2, 3, 4, 0, 0], [5, 6, 7, 8, 9], [10, 0, 0, 0, 0]], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": (ids != 0).astype(np.int64),
            "token_type_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("opset", [11, 13, 17, 18])
@pytest.mark.parametrize("options", [{}, {"pooling": "cls"}, {"normalize": False}])
def test_pooling_with_padding_equals_numpy(tmp_path: Path, opset: int,
                                           options: dict[str, Any]) -> None:
    source, table = build_models.token_embeddings(tmp_path / "tokens.onnx", opset=opset)
    appended = graph_math.for_pipeline(onnx.load(str(source)), "text-embedding", options, {}, {})
    feeds = padded_batch()
    got = run(appended.model, feeds)
    assert list(got) == ["sentence_embedding"]  # the token-level state is dropped
    expected = numpy_embedding(table[feeds["input_ids"]], feeds["attention_mask"],
                               pooling=options.get("pooling", "mean"),
                               normalize=options.get("normalize", True))
    np.testing.assert_allclose(got["sentence_embedding"], expected, rtol=1e-5, atol=1e-6)
    assert appended.options == {"output": "sentence_embedding"}


def test_without_an_attention_mask_padding_is_the_tokenizers_pad_id(tmp_path: Path) -> None:
    source, table = build_models.token_embeddings(tmp_path / "ids.onnx", names=("input_ids",))
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text(json.dumps({"padding": {"pad_id": 1}}))  # only its padding is read
    appended = graph_math.for_pipeline(onnx.load(str(source)), "text-embedding", {},
                                       {"tokenizer.json": tokenizer}, {})
    ids = np.array([[2, 3, 1, 1], [4, 1, 1, 1]], dtype=np.int64)
    got = run(appended.model, {"input_ids": ids})["sentence_embedding"]
    np.testing.assert_allclose(got, numpy_embedding(table[ids], ids != 1), rtol=1e-5, atol=1e-6)


def test_an_opset_below_11_is_left_to_python(tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", opset=10)
    with pytest.raises(graph_math.GraphMathError, match="opset 10"):
        append_classifier(source, {}, np.ones((1, 32), np.float32))


@pytest.fixture(scope="module")
def text_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A built text-embedding artifact, and the bare model served from a folder with its
    tokenizer (no manifest: no in-graph math)."""
    folder = tmp_path_factory.mktemp("text")
    source, _ = build_models.token_embeddings(folder / "tokens.onnx")
    tokenizer = build_models.word_tokenizer(folder / "tokenizer.json")
    out = folder / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer)]) == 0
    return out, source


def test_older_artifacts_and_bare_models_fall_back_to_python(
        text_files: tuple[Path, Path], make_service: Callable[..., Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    built, bare = text_files
    manifest = Manifest.load(built)
    assert manifest.graph_outputs == {"embedding": "sentence_embedding"}
    assert [o.name for o in manifest.outputs] == ["sentence_embedding"]
    request = {"inputs": ["hello world", "the cat sat on the mat", "dog"]}
    served = make_service(built)(request, Context())
    assert "predates" not in capsys.readouterr().out
    fallback = make_service(bare, pipeline="text-embedding")(request, Context())
    assert "no pooling in its graph" in capsys.readouterr().out
    assert fallback["tokens"] == served["tokens"] == [2, 6, 1]
    assert fallback["dimensions"] == served["dimensions"]
    np.testing.assert_allclose(fallback["embeddings"], served["embeddings"], rtol=1e-5,
                               atol=1e-6)


def test_classifier_fallback_matches_the_graph(tmp_path: Path, make_service: Callable[..., Any],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "classifier",
                 "--pipeline-option", "top_k=2"]) == 0
    assert Manifest.load(out).graph_outputs["indices"] == "indices"
    older = tmp_path / "older"  # an artifact from before: its manifest has no graph_outputs
    shutil.copytree(out, older)
    manifest = json.loads((older / "model.json").read_text())
    del manifest["graph_outputs"]
    (older / "model.json").write_text(json.dumps(manifest))
    x = np.random.default_rng(5).standard_normal((4, 32)).astype(np.float32)
    graph = make_service(out)
    assert "no classifier math" not in capsys.readouterr().out
    for model, env in ((older, {}), (source, {"pipeline": "classifier"})):
        fallback = make_service(model, **env)
        assert "no classifier math in its graph" in capsys.readouterr().out
        compare_predictions(graph, fallback, x)


def compare_predictions(graph: Any, fallback: Any, x: np.ndarray) -> None:
    for k in (1, 2, 4, 9):  # within the graph's k, over it (full probabilities), over classes
        request = {"inputs": x.tolist(), "parameters": {"top_k": k}}
        a = graph(request, Context())["predictions"]
        b = fallback(request, Context())["predictions"]
        assert [[e["label"] for e in p["top_k"]] for p in a] == \
               [[e["label"] for e in p["top_k"]] for p in b]
        assert len(a[0]["top_k"]) == min(k, 5)
        np.testing.assert_allclose([[e["score"] for e in p["top_k"]] for p in a],
                                   [[e["score"] for e in p["top_k"]] for p in b], rtol=1e-5)


def test_the_gate_compares_probabilities_not_the_top_k_ranks(tmp_path: Path) -> None:
    from onnx_lambda.build_model.gate import comparable_outputs

    source = build_models.mlp(tmp_path / "mlp.onnx")
    x = np.random.default_rng(2).standard_normal((3, 32)).astype(np.float32)
    appended = append_classifier(source, {}, x)
    outputs = run(appended.model, {"x": x})
    assert set(comparable_outputs(outputs, {})) == {"logits", "probabilities", "scores",
                                                   "indices"}
    rows = graph_math.gated(comparable_outputs, appended)(outputs, {})
    assert set(rows) == {"logits", "probabilities"}
