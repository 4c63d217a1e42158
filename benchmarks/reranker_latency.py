"""Reranker cost per (query, passage) pair: our handler's ``/rerank`` (in process, API Gateway
HTTP API events) on the ``minilm-reranker`` build vs sentence-transformers' ``CrossEncoder``
(PyTorch fp32) on the same weights, one query and its 8 passages per call (``passages.QUERIES``),
one intra-op thread each, interleaved rounds in one process.

    python -m benchmarks.reranker_latency [--model models/minilm-reranker]
        [--fp32 models/minilm-reranker-fp32] [--rounds 5] [--seconds 2]

``--fp32``: an unquantized build (``onnx-lambda build-model minilm-reranker --no-quantize -o
models/minilm-reranker-fp32``) as another row. Timing as ``benchmarks.embeddings_throughput``
(whose ``measure`` runs the rounds): CPU time around each call (what Lambda bills), its wall
clock for the p50. Also printed: the largest score difference to PyTorch and whether every
query's top 3 agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.embeddings_throughput import (
    Call,
    Figures,
    artifact,
    checked_call,
    machine,
    measure,
    one_thread_everywhere,
    service,
)
from onnx_lambda.examples.passages import QUERIES

Queries = tuple[tuple[str, tuple[str, ...]], ...]


def handler_target(built: Any, queries: Queries = QUERIES) -> Any:
    """Query numbers (as ``measure``'s items) → the call that reranks that query's passages."""
    def prepare(items: list[str]) -> Call:
        [number] = items
        query, passages = queries[int(number)]
        return checked_call(built, "/rerank", {"query": query, "texts": list(passages)})

    return prepare


def pytorch_target(queries: Queries = QUERIES) -> tuple[Any, Any, str]:
    """``CrossEncoder.predict`` on the example's PyTorch model, one torch thread."""
    import sentence_transformers
    import torch

    from onnx_lambda.examples import minilm, minilm_reranker

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    model = minilm_reranker.cross_encoder(minilm.weights_folder())

    def prepare(items: list[str]) -> Call:
        query, passages = queries[int(items[0])]
        return lambda: minilm_reranker.torch_scores(model, query, passages)

    return prepare, model, (f"sentence-transformers {sentence_transformers.__version__}, "
                            f"torch {torch.__version__}")


def agreement(built: Any, model: Any, queries: Queries = QUERIES) -> tuple[float, bool]:
    """The largest score difference to PyTorch, and whether every query's top 3 agree."""
    import numpy as np

    from onnx_lambda.examples import minilm_reranker

    worst, same = 0.0, True
    for number, (query, passages) in enumerate(queries):
        ranks = json.loads(handler_target(built, queries)([str(number)])()["body"])  # type: ignore[index]
        ours = np.zeros(len(passages))
        ours[[r["index"] for r in ranks]] = [r["score"] for r in ranks]
        theirs = minilm_reranker.torch_scores(model, query, passages)
        worst = max(worst, float(np.abs(ours - theirs).max()))
        same &= list(np.argsort(-ours, kind="stable")[:3]) == list(
            np.argsort(-theirs, kind="stable")[:3])
    return worst, same


def table(figures: dict[tuple[str, int], Figures], pairs: float, baseline: str) -> str:
    """Pairs per CPU-second, p50 per query and per pair, and the ratio to ``baseline``."""
    lines = ["| target | pairs / CPU-s | p50 ms / query | p50 ms / pair | × PyTorch |",
             "|---|---:|---:|---:|---:|"]
    base = figures[(baseline, 1)].per_cpu_second
    for (name, _), got in figures.items():
        lines.append(f"| {name} | {got.per_cpu_second * pairs:.1f} | {got.p50_ms:.2f} | "
                     f"{got.p50_ms / pairs:.2f} | {got.per_cpu_second / base:.2f}× |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("models/minilm-reranker"))
    parser.add_argument("--fp32", type=Path, help="an unquantized build, as another row")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="CPU seconds per target and round")
    args = parser.parse_args(argv)
    one_thread_everywhere()
    ours = service(args.model)
    targets = {"ours /rerank": handler_target(ours)}
    artifacts = [f"ours: {artifact(args.model)}"]
    if args.fp32:
        targets["ours /rerank, fp32 build"] = handler_target(service(args.fp32))
        artifacts.append(f"fp32 build: {artifact(args.fp32)}")
    baseline = "sentence-transformers CrossEncoder (PyTorch fp32)"
    targets[baseline], model, versions = pytorch_target()
    pairs = sum(len(p) for _, p in QUERIES) / len(QUERIES)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; {versions}",
          *artifacts, f"{args.rounds} rounds × {args.seconds} CPU-s per target, {len(QUERIES)} "
          f"queries × {pairs:.0f} passages; one intra-op thread each", sep="\n")
    worst, same = agreement(ours, model)
    print(f"ours vs PyTorch: max score difference {worst:.4f}, top-3 order "
          f"{'the same for every query' if same else 'DIFFERENT'}")
    figures = measure(targets, sizes=(1,), rounds=args.rounds, seconds=args.seconds,
                      sentences=[str(i) for i in range(len(QUERIES))])
    print(f"load at the end {os.getloadavg()[0]:.2f}\n")
    print(table(figures, pairs, baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
