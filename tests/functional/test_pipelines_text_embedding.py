"""The text-embedding pipeline behind the real handler: a word-level ``tokenizer.json`` and a
model whose token vectors are rows of a known table, so pooling can be checked exactly."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.errors import ModelLoadError
from handler.manifest import Manifest
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.support import build_models
from tests.support.layer import build_layer

MAX_LENGTH = 5


@pytest.fixture(scope="module")
def text_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    folder = tmp_path_factory.mktemp("text")
    source, table = build_models.token_embeddings(folder / "tokens.onnx")
    tokenizer = build_models.word_tokenizer(folder / "tokenizer.json")
    out = folder / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer), "--pipeline-option", f"max_length={MAX_LENGTH}",
                 "--pipeline-option", "max_batch=4"]) == 0
    return out, table


def expected(sentence: str, table: np.ndarray) -> np.ndarray:
    ids = [build_models.VOCAB.get(w, build_models.VOCAB["[UNK]"]) for w in sentence.split()]
    vector = table[ids[:MAX_LENGTH]].mean(axis=0)
    return vector / np.linalg.norm(vector)


def test_batch_is_padded_pooled_and_normalised(text_model: tuple[Path, np.ndarray],
                                               make_service: Callable[..., Any]) -> None:
    folder, table = text_model
    service = make_service(folder)
    sentences = ["hello world", "the cat sat on the mat", "dog", "the dog runs fast"]
    body = service({"inputs": sentences}, Context())
    assert body["dimensions"] == table.shape[1]
    assert body["tokens"] == [2, MAX_LENGTH, 1, 4]  # the second one is truncated
    for sentence, vector in zip(sentences, body["embeddings"], strict=True):
        np.testing.assert_allclose(vector, expected(sentence, table), rtol=1e-5, atol=1e-6)
        # Padding must not leak: alone, the sentence embeds the same.
        alone = service({"inputs": sentence}, Context())["embeddings"][0]
        np.testing.assert_allclose(vector, alone, rtol=1e-5, atol=1e-6)


def test_unknown_words_use_the_unknown_token(text_model: tuple[Path, np.ndarray],
                                             make_service: Callable[..., Any]) -> None:
    folder, table = text_model
    body = make_service(folder)({"inputs": "hello zebra"}, Context())
    np.testing.assert_allclose(body["embeddings"][0], expected("hello zebra", table), rtol=1e-5)


@pytest.mark.parametrize("inputs", [[], [1, 2], {"text": "hi"}, ["a"] * 5, None])
def test_bad_inputs_are_400(text_model: tuple[Path, np.ndarray],
                            make_service: Callable[..., Any], inputs: Any) -> None:
    folder, _ = text_model
    service = make_service(folder)
    body = service({"inputs": inputs}, Context())
    assert body["error"]["type"] in ("InvalidInput", "BadRequest")
    assert "embeddings" in service({"inputs": ["hello"]}, Context())


def test_base64_encoding_format_answers_the_float32_bytes_of_the_same_vectors(
        text_model: tuple[Path, np.ndarray], make_service: Callable[..., Any],
        tmp_path: Path) -> None:
    """``parameters.encoding_format: base64`` (OpenAI's name): each vector as the base64 of its
    little-endian float32 bytes, exactly the values the decimals stand for; the graph-less
    path (Python's pooling) packs its vectors the same way; anything else is a 400 before the
    model runs."""
    folder, _ = text_model
    sentences = ["hello world", "the cat sat on the mat", "dog"]
    python_math = tmp_path / "python-math"  # the same artifact, its graph pooling not named
    shutil.copytree(folder, python_math)
    Manifest.load(python_math)._replace(graph_outputs={}).dump(python_math)
    for artifact in (folder, python_math):
        service = make_service(artifact)
        plain = service({"inputs": sentences}, Context())
        packed = service({"inputs": sentences, "parameters": {"encoding_format": "base64"}},
                         Context())
        assert {k: v for k, v in packed.items() if k != "embeddings"} == {
            k: v for k, v in plain.items() if k != "embeddings"}
        assert all(isinstance(text, str) for text in packed["embeddings"])
        vectors = [np.frombuffer(base64.b64decode(t, validate=True), "<f4")
                   for t in packed["embeddings"]]
        # the graph's float32 values (which their shortest decimals read back as), or Python's
        # float64 math rounded to float32
        for vector, decimals in zip(vectors, plain["embeddings"], strict=True):
            np.testing.assert_array_equal(vector, np.float32(decimals))
        same = service({"inputs": sentences, "parameters": {"encoding_format": "float"}},
                       Context())
        assert same == plain
        bad = service({"inputs": "hi", "parameters": {"encoding_format": "binary"}}, Context())
        assert bad["error"]["type"] == "InvalidInput"
        assert "encoding_format" in bad["error"]["message"]


def test_options_normalize_off_and_cls_pooling(tmp_path: Path,
                                               make_service: Callable[..., Any]) -> None:
    source, table = build_models.token_embeddings(tmp_path / "tokens.onnx")
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer), "--pipeline-option", "normalize=false",
                 "--pipeline-option", "pooling=cls"]) == 0
    body = make_service(out)({"inputs": ["cat dog"]}, Context())
    np.testing.assert_allclose(body["embeddings"][0], table[build_models.VOCAB["cat"]],
                               rtol=1e-6)


def test_missing_tokenizer_fails_init(tmp_path: Path, make_service: Callable[..., Any]) -> None:
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline",
                 "text-embedding"]) == 0
    with pytest.raises(ModelLoadError, match=r"tokenizer\.json"):
        make_service(out)


def test_wordpiece_artifact_ships_the_split_and_the_previous_layout_still_loads(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    """build-model splits a WordPiece tokenizer (tokenizer.base.json + vocab.txt, named in the
    manifest); the same artifact in the previous layout (tokenizer.json alone) embeds the same."""
    vocab = build_models.wordpiece_vocab()
    source, table = build_models.token_embeddings(tmp_path / "tokens.onnx", rows=len(vocab))
    tokenizer = build_models.wordpiece_tokenizer(tmp_path / "tokenizer.json")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer)]) == 0
    manifest = Manifest.load(out)
    assert manifest.pipeline_options["vocabulary"] == "vocab.txt"
    assert {"tokenizer.json", "tokenizer.base.json", "vocab.txt"} <= set(manifest.files)
    previous = tmp_path / "previous"
    shutil.copytree(out, previous)
    for name in ("tokenizer.base.json", "vocab.txt"):
        (previous / name).unlink()
        del manifest.files[name]
    options = {k: v for k, v in manifest.pipeline_options.items()
               if k not in ("tokenizer", "vocabulary")}
    manifest._replace(pipeline_options=options).dump(previous)
    sentences = ["the cat sat [MASK]", "Café unable", "日本 😀 👍", "", "dogs runs " * 200]
    split, whole = (make_service(f)({"inputs": sentences}, Context()) for f in (out, previous))
    assert split == whole
    ids = [vocab["[CLS]"], vocab["the"], vocab["cat"], vocab["sat"], vocab["[MASK]"],
           vocab["[SEP]"]]
    np.testing.assert_allclose(split["embeddings"][0], _normalised(table[ids].mean(axis=0)),
                               rtol=1e-5, atol=1e-6)


def _normalised(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def test_missing_vocabulary_fails_init(tmp_path: Path, make_service: Callable[..., Any]) -> None:
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx",
                                              rows=len(build_models.wordpiece_vocab()))
    tokenizer = build_models.wordpiece_tokenizer(tmp_path / "tokenizer.json")
    out = tmp_path / "model"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer)]) == 0
    (out / "vocab.txt").unlink()
    with pytest.raises(ModelLoadError, match=r"tokenizer\.base\.json with vocab\.txt"):
        make_service(out)


def test_the_image_ships_the_split_tokenizer_without_its_whole_file(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    """``prune-model`` (the Dockerfile's, the layer's) drops tokenizer.json once build-model
    split it, and its manifest entry: a verified start embeds the same."""
    vocab = build_models.wordpiece_vocab()
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", rows=len(vocab))
    tokenizer = build_models.wordpiece_tokenizer(tmp_path / "tokenizer.json")
    out, shipped = tmp_path / "model", tmp_path / "shipped"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer)]) == 0
    shutil.copytree(out, shipped)
    whole = (out / "tokenizer.json").stat().st_size
    freed = build_layer.prune_model(shipped, Manifest.load(out).onnxruntime or "")
    assert not (shipped / "tokenizer.json").exists() and freed >= whole
    assert "tokenizer.json" not in Manifest.load(shipped).files
    assert {"tokenizer.base.json", "vocab.txt"} <= set(Manifest.load(shipped).files)
    sentences = ["the cat sat [MASK]", "Café unable", "日本 😀 👍", ""]
    built, pruned = (make_service(f, verify="always")({"inputs": sentences}, Context())
                     for f in (out, shipped))
    assert built == pruned
    assert build_layer.prune_model(shipped, Manifest.load(out).onnxruntime or "") == 0  # once
