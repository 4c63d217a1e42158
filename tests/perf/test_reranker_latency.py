"""Smoke run of the reranker benchmark on the tiny word-level cross-encoder: our ``/rerank``
through the real handler, one short round; every figure is finite and positive. (The PyTorch
side needs MiniLM's weights: the benchmark itself runs it.)"""

from __future__ import annotations

import math
import re
from pathlib import Path

from benchmarks.embeddings_throughput import measure, service
from benchmarks.reranker_latency import handler_target, table
from tests.functional.test_rerank_routes import build

QUERIES = (("the cat", ("the cat sat", "dog", "hello world")), ("dog runs", ("fast dog", "mat")))


def test_rerank_figures_are_finite_and_positive(tmp_path: Path) -> None:
    built = service(build(tmp_path)[0])
    targets = {"ours": handler_target(built, QUERIES), "again": handler_target(built, QUERIES)}
    figures = measure(targets, sizes=(1,), rounds=1, seconds=0.0,
                      sentences=[str(i) for i in range(len(QUERIES))])
    assert [len(figures[(name, 1)].latencies_ms) for name in targets] == [2, 2]
    text = table(figures, pairs=2.5, baseline="ours")
    numbers = [float(n) for n in re.findall(r"\| (\d+\.\d+)×? ", text)]
    assert len(numbers) == 2 * 4
    assert all(math.isfinite(n) and n > 0 for n in numbers)
    assert "| ours |" in text and "| 1.00× |" in text
