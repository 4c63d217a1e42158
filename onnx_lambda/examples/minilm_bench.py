"""The ``minilm`` acceptance figures, measured side by side in one process:

    python -m onnx_lambda.examples.minilm_bench [--model models/minilm] [--threads 1]

- accuracy: the artifact's embeddings vs PyTorch fp32 (sentence-transformers recipe), cosine
  mean and minimum over ``SENTENCES``;
- latency at batch 1: each sentence tokenized, run and pooled, PyTorch fp32 vs onnxruntime on
  the raw export (fp32) vs the artifact, interleaved round by round so load on the machine hits
  all three alike; p50 per engine and the speed-up over PyTorch;
- session load: the raw export vs the artifact, as the runtime loads each; sizes.

Builds ``--model`` first when it does not exist. Exits 1 when an acceptance figure is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.table import Table

from handler.model import Model
from handler.pipelines import load as load_pipeline
from onnx_lambda.build import measure
from onnx_lambda.build.gate import as_numpy
from onnx_lambda.examples import minilm
from onnx_lambda.examples.sentences import SENTENCES

if TYPE_CHECKING:
    from tokenizers import Tokenizer

ACCEPT_MEAN_COSINE = 0.99
ACCEPT_MIN_COSINE = 0.98
ACCEPT_SPEEDUP = 3.5
Embed = Callable[[str], np.ndarray]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("models/minilm"))
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for both engines (default 1: one Lambda vCPU)")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the sentences")
    args = parser.parse_args(argv)
    console = Console()
    if not args.model.exists():
        from onnx_lambda.cli import main as cli

        if cli(["build-model", "minilm", "-o", str(args.model)]) != 0:
            return 1
    import torch

    torch.set_num_threads(args.threads)
    folder = minilm.weights_folder()
    tok = minilm.tokenizer(folder)
    torch_model = minilm.load_torch_model(folder)
    with tempfile.TemporaryDirectory() as workdir:
        raw = Path(workdir) / "raw.onnx"
        minilm.export(torch_model, minilm.encode(tok, ["trace", "a second sentence"]), raw)
        loads = {"raw export": _load_ms(lambda: measure.load_raw(raw, args.threads)),
                 "artifact": _load_ms(lambda: measure.load_folder(args.model, args.threads))}
        sizes = {"raw export": raw.stat().st_size, "artifact": measure.folder_size(args.model)}
        artifact = measure.load_folder(args.model, args.threads)
        engines: dict[str, Embed] = {
            "PyTorch fp32": lambda s: minilm.torch_embed(torch_model,
                                                         minilm.encode(tok, [s]))[0],
            "ORT raw export": _ort_embed(measure.load_raw(raw, args.threads), tok),
            "ORT artifact": _pipeline_embed(artifact),
        }
        reference = np.stack([engines["PyTorch fp32"](s) for s in SENTENCES])
        candidate = np.stack([engines["ORT artifact"](s) for s in SENTENCES])
        cosine = (reference * candidate).sum(axis=1)
        p50 = _latencies(engines, args.rounds)
    speedup = p50["PyTorch fp32"] / p50["ORT artifact"]
    _print(console, args, cosine, p50, loads, sizes)
    checks = {
        f"mean cosine ≥ {ACCEPT_MEAN_COSINE}": cosine.mean() >= ACCEPT_MEAN_COSINE,
        f"min cosine ≥ {ACCEPT_MIN_COSINE}": cosine.min() >= ACCEPT_MIN_COSINE,
        f"speed-up ≥ {ACCEPT_SPEEDUP}× ({speedup:.2f}×)": speedup >= ACCEPT_SPEEDUP,
        "artifact loads faster than the raw export": loads["artifact"] < loads["raw export"],
    }
    for label, ok in checks.items():
        console.print(f"{'[green]PASS' if ok else '[red]FAIL'}[/] {label}")
    return 0 if all(checks.values()) else 1


def _pipeline_embed(model: Model) -> Embed:
    """The artifact as served: the manifest's text-embedding pipeline around ``session.run``."""
    manifest = model.artifact.manifest
    assert manifest is not None
    pipeline = load_pipeline(manifest.pipeline, model, manifest.pipeline_options)

    def embed(sentence: str) -> np.ndarray:
        feeds = pipeline.preprocess([sentence], {})
        embeddings = pipeline.postprocess(model.run(feeds), {}, feeds)["embeddings"]
        return np.asarray(embeddings[0], dtype=np.float32)

    return embed


def _ort_embed(model: Model, tok: Tokenizer) -> Embed:
    def embed(sentence: str) -> np.ndarray:
        feeds = minilm.encode(tok, [sentence])
        return minilm.pool(as_numpy(model.run(feeds))[minilm.OUTPUT], feeds["attention_mask"])[0]

    return embed


def _latencies(engines: dict[str, Embed], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in engines}
    for embed in engines.values():  # warm-up
        for sentence in SENTENCES[:5]:
            embed(sentence)
    for _ in range(rounds):
        for sentence in SENTENCES:
            for name, embed in engines.items():
                start = time.perf_counter()
                embed(sentence)
                times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: statistics.median(values) for name, values in times.items()}


def _load_ms(load: Callable[[], object], repeats: int = 5) -> float:
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        load()
        durations.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(durations)


def _print(console: Console, args: argparse.Namespace, cosine: np.ndarray,
           p50: dict[str, float], loads: dict[str, float], sizes: dict[str, int]) -> None:
    console.print(f"minilm acceptance: {len(SENTENCES)} sentences, batch 1, {args.threads} "
                  f"thread(s), {args.rounds} rounds, artifact {args.model}")
    console.print(f"cosine to PyTorch fp32: mean {cosine.mean():.4f}, min {cosine.min():.4f}")
    table = Table("engine", "p50 ms (tokenize+run+pool)", "speed-up vs PyTorch")
    for name, value in p50.items():
        table.add_row(name, f"{value:.2f}", f"{p50['PyTorch fp32'] / value:.2f}×")
    console.print(table)
    for name in loads:
        console.print(f"{name}: session load {loads[name]:.0f} ms, "
                      f"size {sizes[name] / 1024 / 1024:.1f} MiB")


if __name__ == "__main__":
    sys.exit(main())
