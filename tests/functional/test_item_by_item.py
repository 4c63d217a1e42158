"""``item_by_item``: a text pipeline that runs each item of a batch alone, so that its answer
never depends on its neighbours. The models here couple the items of a batch on purpose (their
token rows divided by the batch's largest value, as dynamic INT8's one activation scale per
tensor does), or are quantized by dynamic INT8 itself: the same artifact with the option off is
the control that shows the coupling is there."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.artifact import Artifact
from handler.manifest import ITEM_BY_ITEM, Manifest
from handler.model import Model
from handler.ort.tensor import from_values
from handler.pipelines.text_inputs import run_alone
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support import build_models

SENTENCES = ["hello world", "the cat sat on the mat", "dog", "the dog runs fast", "cat"]
PASSAGES = ["the cat sat on the mat", "dog", "hello world the dog runs fast", "mat"]


def _build(folder: Path, source: Path, pipeline: str, *extra: str) -> Path:
    tokenizer = build_models.word_tokenizer(folder / "tokenizer.json")
    out = folder / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", pipeline, "--file",
                 str(tokenizer), "--pipeline-option", "max_batch=8", *extra]) == 0
    return out


def _switched(folder: Path, value: bool) -> Path:
    """The same artifact with ``item_by_item`` set to ``value`` in its manifest."""
    manifest = Manifest.load(folder)
    options = {**manifest.pipeline_options, ITEM_BY_ITEM: value}
    manifest._replace(pipeline_options=options).dump(folder)
    return folder


def _vectors(service: Any, inputs: Any) -> np.ndarray:
    return np.asarray(service({"inputs": inputs}, Context())["embeddings"])


@pytest.fixture(scope="module")
def coupled_embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("coupled")
    source, _ = build_models.token_embeddings(folder / "tokens.onnx")
    return _build(folder, build_models.rows_through(source), "text-embedding",
                  "--pipeline-option", f"{ITEM_BY_ITEM}=true")


def test_each_text_gets_its_vector_alone_inside_a_batch(coupled_embedder: Path,
                                                        make_service: Callable[..., Any]) -> None:
    service = make_service(_switched(coupled_embedder, True))
    batched = _vectors(service, SENTENCES)
    alone = np.concatenate([_vectors(service, sentence) for sentence in SENTENCES])
    assert np.array_equal(batched, alone)  # bit for bit: the same run
    body = service({"inputs": SENTENCES}, Context())
    assert body["tokens"] == [2, 6, 1, 4, 1]
    # TEI's /embed runs the pipeline's way too
    tei = json.loads(service(http_event("POST", "/embed", json.dumps({"inputs": SENTENCES})),
                             Context())["body"])
    assert np.array_equal(np.asarray(tei, np.float32), batched.astype(np.float32))
    # Control: the same artifact run as one padded batch gives other vectors.
    control = make_service(_switched(coupled_embedder, False))
    assert not np.allclose(_vectors(control, SENTENCES), alone, atol=1e-3)
    _switched(coupled_embedder, True)


def test_the_option_must_be_a_boolean(coupled_embedder: Path,
                                      make_service: Callable[..., Any]) -> None:
    from handler.errors import ModelLoadError

    manifest = Manifest.load(coupled_embedder)
    try:
        manifest._replace(pipeline_options={**manifest.pipeline_options, ITEM_BY_ITEM: "yes"}
                          ).dump(coupled_embedder)
        with pytest.raises(ModelLoadError, match="item_by_item option must be true or false"):
            make_service(coupled_embedder)
    finally:
        manifest.dump(coupled_embedder)


def test_token_outputs_come_back_padded_to_the_batch(tmp_path: Path) -> None:
    """A bare model's per-token output, run item by item: each item's rows as alone, zeros
    where the batch padded it."""
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx")
    model = Model(Artifact(build_models.rows_through(source), None, False), threads=1,
                  graph_optimization="basic")
    rows = [[2, 3, 0, 0], [4, 5, 6, 7], [8, 0, 0, 0]]
    mask = [[int(t != 0) for t in row] for row in rows]
    feeds = {name: from_values("int64", (3, 4), [v for row in values for v in row])
             for name, values in (("input_ids", rows), ("attention_mask", mask),
                                  ("token_type_ids", [[0] * 4] * 3))}
    joined = run_alone(model, feeds, mask)["last_hidden_state"].numpy()
    assert joined.shape[:2] == (3, 4)
    for row, kept in zip(range(3), mask, strict=True):
        length = sum(kept)
        alone = model.run({name: from_values("int64", (1, length), values[row][:length])
                           for name, values in (("input_ids", rows), ("attention_mask", mask),
                                                ("token_type_ids", [[0] * 4] * 3))})
        assert np.array_equal(joined[row, :length], alone["last_hidden_state"].numpy()[0])
        assert not joined[row, length:].any()


def test_each_pair_gets_its_score_alone_inside_a_rerank_batch(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    source, _ = build_models.cross_encoder(tmp_path / "cross.onnx")
    folder = _build(tmp_path, build_models.rows_through(source), "rerank",
                    "--pipeline-option", f"{ITEM_BY_ITEM}=true")

    def scores(service: Any, texts: list[str]) -> dict[int, float]:
        body = service({"inputs": {"query": "the cat", "texts": texts},
                        "parameters": {"raw_scores": True}}, Context())
        return {rank["index"]: rank["score"] for rank in body["ranks"]}

    service = make_service(folder)
    batched = scores(service, PASSAGES)
    assert batched == {i: scores(service, [text])[0] for i, text in enumerate(PASSAGES)}
    control = make_service(_switched(folder, False))
    assert scores(control, PASSAGES) != batched


def test_a_dynamic_int8_build_declares_item_by_item_and_is_judged_as_served(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    """``--quantize int8-dynamic`` on a text-embedding model: its one activation scale spans
    the batch, so the build declares ``item_by_item`` and its invariance gate runs the batch the
    pipeline's way; a batch-invariant method does not set it."""
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=16)
    projection = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    build_models.rows_through(source, projection=projection)
    (tmp_path / "dynamic").mkdir()
    folder = _build(tmp_path / "dynamic", source, "text-embedding", "--quantize", "int8-dynamic")
    manifest = Manifest.load(folder)
    assert manifest.pipeline_options[ITEM_BY_ITEM] is True
    assert manifest.metadata["quantization"]["type"] == "dynamic-int8"
    invariance = manifest.metadata["build"]["batch_invariance"]
    assert invariance is None or invariance == 1.0
    service = make_service(folder)
    alone = np.concatenate([_vectors(service, sentence) for sentence in SENTENCES])
    assert np.array_equal(_vectors(service, SENTENCES), alone)
    # Control: dynamic INT8 run as one padded batch moves the vectors.
    control = make_service(_switched(folder, False))
    assert not np.array_equal(_vectors(control, SENTENCES), alone)
    (tmp_path / "weights").mkdir()
    weights = _build(tmp_path / "weights", source, "text-embedding", "--quantize",
                     "int8-weights")
    assert ITEM_BY_ITEM not in Manifest.load(weights).pipeline_options
