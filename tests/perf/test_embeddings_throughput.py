"""Smoke run of the embeddings throughput benchmark on a tiny word-level text-embedding model:
our two routes through the real handler, one short round; every figure is finite and positive.
(The sentence-transformers side needs MiniLM's weights: the benchmark itself runs it.)"""

from __future__ import annotations

import math
import re
from pathlib import Path

from benchmarks.embeddings_throughput import batches, handler_target, measure, service, table
from onnx_lambda.cli import main
from tests.support import build_models

SENTENCES = ("hello world", "the cat sat on the mat", "dog", "a b c")


def test_batches_cover_every_sentence_and_wrap_around() -> None:
    assert batches(3, SENTENCES) == [list(SENTENCES[:3]), [SENTENCES[3], *SENTENCES[:2]]]
    assert batches(1, SENTENCES) == [[s] for s in SENTENCES]


def test_throughput_figures_are_finite_and_positive(tmp_path: Path) -> None:
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=8)
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    assert main(["build-model", str(source), "-o", str(tmp_path / "model"), "--pipeline",
                 "text-embedding", "--file", str(tokenizer), "--name", "words"]) == 0
    built = service(tmp_path / "model")
    targets = {"predict": handler_target(built, "/predict"),
               "openai": handler_target(built, "/v1/embeddings")}
    figures = measure(targets, sizes=(1, 3), rounds=1, seconds=0.0, sentences=SENTENCES)
    assert set(figures) == {(name, size) for name in targets for size in (1, 3)}
    # one pass each: 4 sentences in 4 batches of 1, or 2 batches of 3 (6 sentences, wrapped)
    assert [figures[("predict", s)].sentences for s in (1, 3)] == [4, 6]
    assert [len(figures[("openai", s)].latencies_ms) for s in (1, 3)] == [4, 2]
    text = table(figures, "predict")
    numbers = [float(n) for n in re.findall(r"\| (\d+\.\d+)×? ", text)]
    assert len(numbers) == 4 * 3
    assert all(math.isfinite(n) and n > 0 for n in numbers)
    assert "| 3 | predict |" in text and text.count("| 1.00× |") >= 2
