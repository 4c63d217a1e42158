"""The ``minilm`` acceptance figures, measured side by side in one process:

    python -m onnx_lambda.bench.minilm_acceptance [--model models/minilm ...] [--threads 1]

- accuracy: the artifact's embeddings vs PyTorch fp32 (sentence-transformers recipe), cosine
  mean and minimum over ``SENTENCES``;
- latency at batch 1: each sentence tokenized, run and pooled, PyTorch fp32 vs onnxruntime on
  the raw export (fp32) vs the artifact, interleaved round by round so load on the machine hits
  all three alike; p50 per engine and the speed-up over PyTorch;
- session load: the raw export vs the artifact, as the runtime loads each; sizes.

Builds ``--model`` first when it does not exist (the builder, as ``onnx-lambda build-model
minilm -o FOLDER`` runs it). Exits 1 when an acceptance figure is missed
by any artifact.
"""

from __future__ import annotations

import argparse
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
from onnx_lambda.bench.stats import DEFINITION, median
from onnx_lambda.build_model import measure
from onnx_lambda.build_model.gate import as_numpy
from onnx_lambda.examples import minilm
from onnx_lambda.examples.sentences import SENTENCES
from onnx_lambda.sizes import human_size

if TYPE_CHECKING:
    from tokenizers import Tokenizer

ACCEPT_MEAN_COSINE = 0.99
ACCEPT_MIN_COSINE = 0.98
ACCEPT_SPEEDUP = 3.5
Embed = Callable[[str], np.ndarray]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, action="append",
                        help="an artifact folder (repeatable; default: models/minilm)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for both engines (default 1: one Lambda vCPU)")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the sentences")
    args = parser.parse_args(argv)
    args.model = args.model or [Path("models/minilm")]
    console = Console()
    for folder in args.model:
        if not folder.exists() and not _build(folder, console):
            return 1
    import torch

    torch.set_num_threads(args.threads)
    folder = minilm.weights_folder()
    tok = minilm.tokenizer(folder)
    torch_model = minilm.load_torch_model(folder)
    with tempfile.TemporaryDirectory() as workdir:
        raw = Path(workdir) / "raw.onnx"
        minilm.export(torch_model, minilm.encode(tok, ["trace", "a second sentence"]), raw)
        names = {folder: f"ORT {folder.name}" for folder in args.model}
        loads = {"ORT raw export": _load_ms(lambda: measure.load_raw(raw, args.threads))}
        sizes = {"ORT raw export": raw.stat().st_size}
        engines: dict[str, Embed] = {
            "PyTorch fp32": lambda s: minilm.torch_embed(torch_model,
                                                         minilm.encode(tok, [s]))[0],
            "ORT raw export": _ort_embed(measure.load_raw(raw, args.threads), tok),
        }
        for folder, name in names.items():
            loads[name] = _load_ms(lambda f=folder: measure.load_folder(f, args.threads))
            sizes[name] = measure.folder_size(folder)
            engines[name] = _pipeline_embed(measure.load_folder(folder, args.threads))
        reference = np.stack([engines["PyTorch fp32"](s) for s in SENTENCES])
        cosines = {name: (reference * np.stack([engines[name](s) for s in SENTENCES])).sum(axis=1)
                   for name in names.values()}
        p50 = _latencies(engines, args.rounds)
    _print(console, args, cosines, p50, loads, sizes)
    checks = {}
    for name, cosine in cosines.items():
        speedup = p50["PyTorch fp32"] / p50[name]
        checks |= {
            f"{name}: mean cosine ≥ {ACCEPT_MEAN_COSINE}": cosine.mean() >= ACCEPT_MEAN_COSINE,
            f"{name}: min cosine ≥ {ACCEPT_MIN_COSINE}": cosine.min() >= ACCEPT_MIN_COSINE,
            f"{name}: speed-up ≥ {ACCEPT_SPEEDUP}× ({speedup:.2f}×)": speedup >= ACCEPT_SPEEDUP,
            f"{name} loads faster than the raw export": loads[name] < loads["ORT raw export"],
        }
    for label, ok in checks.items():
        console.print(f"{'[green]PASS' if ok else '[red]FAIL'}[/] {label}")
    return 0 if all(checks.values()) else 1


def _build(folder: Path, console: Console) -> bool:
    """The ``minilm`` example built into ``folder`` with the default options."""
    from onnx_lambda import examples
    from onnx_lambda.build_model.builder import build
    from onnx_lambda.build_model.errors import BuildError
    from onnx_lambda.build_model.spec import BuildOptions

    try:
        with tempfile.TemporaryDirectory(prefix="onnx-lambda-source-") as workdir:
            build(examples.prepare("minilm", Path(workdir), console), folder, BuildOptions(),
                  console)
    except BuildError as exc:
        console.print(f"[red]error:[/red] {exc.message}", highlight=False)
        return False
    return True


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
    return {name: median(values) for name, values in times.items()}


def _load_ms(load: Callable[[], object], repeats: int = 5) -> float:
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        load()
        durations.append((time.perf_counter() - start) * 1000.0)
    return median(durations)


def _print(console: Console, args: argparse.Namespace, cosines: dict[str, np.ndarray],
           p50: dict[str, float], loads: dict[str, float], sizes: dict[str, int]) -> None:
    console.print(f"minilm acceptance: {len(SENTENCES)} sentences, batch 1, {args.threads} "
                  f"thread(s), {args.rounds} rounds, artifacts "
                  f"{', '.join(str(m) for m in args.model)}; {DEFINITION}")
    table = Table("engine", "size", "session load ms", "p50 ms (tokenize+run+pool)",
                  "speed-up vs PyTorch", "cosine mean / min")
    for name, value in p50.items():
        cosine = cosines.get(name)
        table.add_row(name, human_size(sizes[name]) if name in sizes else "–",
                      f"{loads[name]:.0f}" if name in loads else "–", f"{value:.2f}",
                      f"{p50['PyTorch fp32'] / value:.2f}×",
                      "–" if cosine is None else f"{cosine.mean():.4f} / {cosine.min():.4f}")
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
