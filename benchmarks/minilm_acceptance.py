"""The ``minilm`` acceptance figures, measured side by side in one process:

    python -m benchmarks.minilm_acceptance [--model models/minilm ...] [--threads 1]

- accuracy: the artifact's embeddings vs PyTorch fp32 (sentence-transformers recipe), cosine
  mean and minimum over ``HELD_OUT`` (the judging half of the gate texts: none tuned the build)
  and over ``UNSEEN`` (texts written after the default was chosen: none informed it either);
- batch invariance: ``MIXED`` (8 held-out texts of every style) each embedded alone and inside
  one batch of the 8, the lowest cosine between the two: through the artifact's pipeline as
  served (its ``run``: one padded batch, or each item alone where the manifest says
  ``item_by_item``), PyTorch and the raw export as one padded batch; and the CPU time of that
  batch of 8 (p50 over the rounds), what a batched request costs;
- the baseline: PyTorch fp32 as transformers loads it by default (``sdpa`` attention),
  ``inference_mode``, the same tokenizer, warmed up; the ``eager`` attention the export traces
  is shown beside it;
- latency at batch 1: each sentence tokenized, run and pooled into a numpy vector, PyTorch fp32
  vs onnxruntime on the raw export (fp32) vs the artifact (its pipeline's tokenizer and the
  pooling in its graph), interleaved round by round so load on the machine hits all alike; p50
  per engine of the wall time and of the thread's CPU time (every engine computes on the
  calling thread at one thread: on a shared machine the CPU time leaves out the time other
  processes held the core, so the speed-up is judged on it), and the speed-up over PyTorch.
  The served response's shortest-decimal floats (``pipeline.postprocess``, JSON encoding) are
  not counted, on either side: their cost is printed apart;
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
from onnx_lambda.build_model import measure
from onnx_lambda.build_model.gate import as_numpy
from onnx_lambda.examples import minilm
from onnx_lambda.examples.sentences import SENTENCES, UNSEEN, gate_texts
from onnx_lambda.sizes import human_size
from onnx_lambda.stats import DEFINITION, median

if TYPE_CHECKING:
    from tokenizers import Tokenizer

ACCEPT_MEAN_COSINE = 0.995  # on held-out texts (issue 32)
ACCEPT_MIN_COSINE = 0.99
HELD_OUT = gate_texts()[1::2]  # gate.split's judging half
MIXED = HELD_OUT[::6]  # 8 of them, spread over its styles (a query, code, numbers, French, long)
ACCEPT_SPEEDUP = 5.0  # design.md's budget, on CPU time
ACCEPT_INVARIANCE = 0.99999  # an item alone vs inside the batch of 8 (issue 32)
# Not measured: fastembed downloads its ONNX files from a model hub at first use, which this
# project's machines do not reach (HF_HUB_OFFLINE).
FASTEMBED = ("fastembed: not measured (it downloads its ONNX files from a model hub at first "
             "use; this machine reaches none)")
Embed = Callable[[list[str]], np.ndarray]  # texts → one vector each (one call: a batch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, action="append",
                        help="an artifact folder (repeatable; default: models/minilm)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for both engines (default 1: one Lambda vCPU)")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the sentences")
    args = parser.parse_args(argv)
    args.model = args.model or [Path("models/minilm")]
    console = Console(width=max(Console().width, 110))
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
        baseline = minilm.load_torch_model(folder, "sdpa")
        engines: dict[str, Embed] = {
            "PyTorch fp32": lambda texts: minilm.torch_embed(baseline, minilm.encode(tok, texts)),
            "PyTorch fp32, eager attention": lambda texts: minilm.torch_embed(
                torch_model, minilm.encode(tok, texts)),
            "ORT raw export": _ort_embed(measure.load_raw(raw, args.threads), tok),
        }
        encode_ms = {}
        for folder, name in names.items():
            loads[name] = _load_ms(lambda f=folder: measure.load_folder(f, args.threads))
            sizes[name] = measure.folder_size(folder)
            engines[name], encode_ms[name] = _pipeline_embed(
                measure.load_folder(folder, args.threads))
        cosines = _cosines(engines, HELD_OUT)
        unseen = _cosines(engines, UNSEEN)
        invariance = {name: _invariance(embed) for name, embed in engines.items()}
        p50, cpu, batch_cpu = _latencies(engines, args.rounds)
    _print(console, args, (cosines, unseen), invariance, (p50, cpu, batch_cpu), loads, sizes)
    console.print(FASTEMBED, highlight=False)
    for name, encode in encode_ms.items():
        console.print(f"{name}: the served response's JSON floats (pipeline.postprocess) add "
                      f"{encode():.2f} ms p50 (not counted above)", highlight=False)
    checks = {}
    for name in names.values():
        speedup = cpu["PyTorch fp32"] / cpu[name]
        checks[f"{name}: alone vs in a batch of 8 ≥ {ACCEPT_INVARIANCE} "
               f"({invariance[name]:.7f})"] = invariance[name] >= ACCEPT_INVARIANCE
        for texts, cosine in (("held out", cosines[name]), ("unseen", unseen[name])):
            checks |= {
                f"{name}: mean cosine ≥ {ACCEPT_MEAN_COSINE} ({texts})":
                    cosine.mean() >= ACCEPT_MEAN_COSINE,
                f"{name}: min cosine ≥ {ACCEPT_MIN_COSINE} ({texts})":
                    cosine.min() >= ACCEPT_MIN_COSINE}
        checks |= {
            f"{name}: speed-up ≥ {ACCEPT_SPEEDUP}× on CPU time ({speedup:.2f}×)":
                speedup >= ACCEPT_SPEEDUP,
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


def _pipeline_embed(model: Model) -> tuple[Embed, Callable[[], float]]:
    """The artifact as served: the manifest's text-embedding pipeline's tokenizer, then
    ``session.run`` (the pooling is in the graph); and a timer of what ``postprocess`` adds
    (the response's JSON floats), p50 ms over the sentences."""
    manifest = model.artifact.manifest
    assert manifest is not None
    pipeline = load_pipeline(manifest.pipeline, model, manifest.pipeline_options)
    if pipeline.embedding is None:
        raise SystemExit(f"{model.artifact.path.parent}: no pooling in the graph (built before "
                         "build-model appended it): rebuild it")

    def embed(texts: list[str]) -> np.ndarray:
        return np.array(pipeline.run(pipeline.preprocess(texts, {}))[pipeline.embedding].numpy())

    def encode_ms() -> float:
        durations = []
        for sentence in SENTENCES:
            feeds = pipeline.preprocess([sentence], {})
            outputs = pipeline.run(feeds)
            start = time.perf_counter()
            pipeline.postprocess(outputs, {}, feeds)
            durations.append((time.perf_counter() - start) * 1000.0)
        return median(durations)

    return embed, encode_ms


def _ort_embed(model: Model, tok: Tokenizer) -> Embed:
    def embed(texts: list[str]) -> np.ndarray:
        feeds = minilm.encode(tok, texts)
        return minilm.pool(as_numpy(model.run(feeds))[minilm.OUTPUT], feeds["attention_mask"])

    return embed


def _cosines(engines: dict[str, Embed], texts: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Every engine but the baseline: each text's cosine to PyTorch fp32's vector, alone."""
    reference = np.concatenate([engines["PyTorch fp32"]([text]) for text in texts])
    return {name: (reference * np.concatenate([embed([text]) for text in texts])).sum(axis=1)
            for name, embed in engines.items() if name != "PyTorch fp32"}


def _invariance(embed: Embed) -> float:
    """The lowest cosine between a ``MIXED`` text's vector alone and inside their one batch."""
    alone = np.concatenate([embed([text]) for text in MIXED])
    together = embed(list(MIXED))
    return float(((alone * together).sum(axis=1) / np.linalg.norm(alone, axis=1)
                  / np.linalg.norm(together, axis=1)).min())


def _latencies(engines: dict[str, Embed], rounds: int
               ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """p50 per engine: wall ms and the calling thread's CPU ms at batch 1, and the CPU ms of
    the batch of ``MIXED``, interleaved round by round."""
    wall: dict[str, list[float]] = {name: [] for name in engines}
    cpu: dict[str, list[float]] = {name: [] for name in engines}
    batch: dict[str, list[float]] = {name: [] for name in engines}
    for embed in engines.values():  # warm-up
        for sentence in SENTENCES[:5]:
            embed([sentence])
    for _ in range(rounds):
        for sentence in SENTENCES:
            for name, embed in engines.items():
                start, start_cpu = time.perf_counter(), time.thread_time()
                embed([sentence])
                cpu[name].append((time.thread_time() - start_cpu) * 1000.0)
                wall[name].append((time.perf_counter() - start) * 1000.0)
        for name, embed in engines.items():
            start_cpu = time.thread_time()
            embed(list(MIXED))
            batch[name].append((time.thread_time() - start_cpu) * 1000.0)
    return tuple({name: median(values) for name, values in measured.items()}  # type: ignore
                 for measured in (wall, cpu, batch))


def _load_ms(load: Callable[[], object], repeats: int = 5) -> float:
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        load()
        durations.append((time.perf_counter() - start) * 1000.0)
    return median(durations)


def _print(console: Console, args: argparse.Namespace,
           accuracy: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
           invariance: dict[str, float], times: tuple[dict[str, float], ...],
           loads: dict[str, float], sizes: dict[str, int]) -> None:
    p50, cpu, batch_cpu = times
    cosines, unseen = accuracy
    console.print(f"minilm acceptance: {len(SENTENCES)} sentences, batch 1, {args.threads} "
                  f"thread(s), {args.rounds} rounds, artifacts "
                  f"{', '.join(str(m) for m in args.model)}; accuracy on {len(HELD_OUT)} "
                  f"held-out and {len(UNSEEN)} unseen texts; invariance and batch on "
                  f"{len(MIXED)}; {DEFINITION}")
    table = Table("engine", "size", "load ms", "p50 ms", "× PyTorch", "CPU ms", "× (CPU)",
                  "cosine mean / min (held out)", "(unseen)", "alone vs batch of 8",
                  "batch of 8 CPU ms",
                  title="p50 of tokenize + run + pool, and its CPU time")
    for name, value in p50.items():
        cosine, other = cosines.get(name), unseen.get(name)
        table.add_row(name, human_size(sizes[name]) if name in sizes else "–",
                      f"{loads[name]:.0f}" if name in loads else "–", f"{value:.2f}",
                      f"{p50['PyTorch fp32'] / value:.2f}×", f"{cpu[name]:.2f}",
                      f"{cpu['PyTorch fp32'] / cpu[name]:.2f}×",
                      "reference" if cosine is None else
                      f"{cosine.mean():.5f} / {cosine.min():.5f}",
                      "–" if other is None else f"{other.mean():.5f} / {other.min():.5f}",
                      f"{invariance[name]:.7f}", f"{batch_cpu[name]:.2f}")
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
