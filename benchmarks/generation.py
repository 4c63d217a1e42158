"""Generation at batch 1: time to first token (TTFT) and tokens/s of our generate pipeline (the
handler's decode loop over ONNX Runtime's C API) vs onnxruntime-genai (its own C++ loop on the
very same ONNX graph, through the ``genai_config.json`` the test decoder writes) vs transformers
on PyTorch (the same weights), greedy, the same intra-op threads, interleaved rounds.

    python -m benchmarks.generation [--size small|tiny|realistic] [--kind llama|gpt2]
        [--threads 1] [--tokens 64] [--rounds 5] [--int4] [--workdir DIR]

The decoder is ``onnx_lambda.examples.decoder`` (random weights: speed, not text), exported
once into ``--workdir`` and built with ``build-model`` (offline-optimized, as it ships): ours
and onnxruntime-genai load the same optimized file. ``--int4`` adds rows for a weight-only
int4 build (``--quantize int4``; random weights fail the token gate by design, so the builds
run with ``--min-token-agreement 0``).
Every target generates exactly ``--tokens`` tokens after the same prompt; a round runs each
target once, the order rotated from round to round; reported: medians over rounds.
TTFT: from the call to the first token in hand (prefill + one choice); tokens/s: the tokens
after the first over the time after the first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from onnx_lambda.examples import decoder

PROMPT = "The quick brown fox jumps over the lazy dog. " * 4
class Sample(NamedTuple):
    ttft_ms: float  # wall clock
    tps: float
    cpu_ttft_ms: float  # the calling thread's CPU time: one intra-op thread computes on it,
    cpu_tps: float  # so on a shared host it leaves out the time other processes held the core
    tokens: list[int]


Run = Callable[[], Sample]
# target → load ms in this process: ours the whole init (artifact, session, tokenizer, the
# choice graphs, warm-up), onnxruntime-genai its og.Model (session and config; no warm-up)
LOADS: dict[str, float] = {}


def timed_load(name: str, load: Callable[[], Any]) -> Any:
    """``load()`` twice, the faster time kept (the first read may find the weights outside the
    page cache, whichever target comes first); the second instance is the one used."""
    times = []
    for _ in range(2):
        started = time.perf_counter()
        loaded = load()
        times.append((time.perf_counter() - started) * 1000.0)
    LOADS[name] = min(times)
    return loaded


class Clock:
    """Wall and thread-CPU time at the start, at the first token and at the end."""

    def __init__(self) -> None:
        self.marks = [(time.perf_counter(), time.thread_time())]

    def mark(self) -> None:
        self.marks.append((time.perf_counter(), time.thread_time()))

    def sample(self, tokens: list[int]) -> Sample:
        (w0, c0), (w1, c1), (w2, c2) = self.marks[0], self.marks[1], self.marks[-1]
        after = len(tokens) - 1
        return Sample((w1 - w0) * 1000.0, after / (w2 - w1), (c1 - c0) * 1000.0,
                      after / max(c2 - c1, 1e-9), tokens)


def ours(folder: Path, threads: int, prompt: str, tokens: int) -> Run:
    from handler.bootstrap import create
    from handler.generation.params import GenerationParams
    from handler.settings import Settings

    settings = Settings.from_env({"ONNX_LAMBDA_MODEL": str(folder),
                                  "ONNX_LAMBDA_PIPELINE": "generate",
                                  "ONNX_LAMBDA_THREADS": str(threads)})
    service = timed_load(f"ours {folder.name}", lambda: create(settings))
    pipeline = service.pipeline
    ids = pipeline.encode(prompt)
    params = GenerationParams(max_tokens=tokens, temperature=0)

    def run() -> Sample:
        clock, out = Clock(), []
        for step in pipeline.generate(ids, params, lambda: False):
            if not out:
                clock.mark()
            out += step.token_ids
        clock.mark()
        return clock.sample(out)

    return run


def genai(folder: Path, threads: int, prompt_ids: list[int], tokens: int) -> Run:
    import onnxruntime_genai as og

    config = json.loads((folder / "genai_config.json").read_text())
    options = config["model"]["decoder"]["session_options"]
    options.update({"intra_op_num_threads": threads, "inter_op_num_threads": 1})
    (folder / "genai_config.json").write_text(json.dumps(config, indent=2))
    model = timed_load(f"onnxruntime-genai {folder.name}", lambda: og.Model(str(folder)))

    def run() -> Sample:
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(prompt_ids) + tokens, do_sample=False)
        generator = og.Generator(model, params)
        clock, out = Clock(), []
        generator.append_tokens([prompt_ids])
        while not generator.is_done():
            generator.generate_next_token()
            out.append(int(generator.get_next_tokens()[0]))
            if len(out) == 1:
                clock.mark()
        clock.mark()
        return clock.sample(out)

    return run


def pytorch(kind: str, size: decoder.Size, threads: int, prompt_ids: list[int],
            tokens: int) -> Run:
    import torch
    from transformers.generation.streamers import BaseStreamer

    torch.set_num_threads(threads)
    model = decoder.build_torch(kind, size, 0)

    class Marks(BaseStreamer):  # put(): the prompt first, then each new token
        def __init__(self) -> None:
            self.clock, self.puts = Clock(), 0

        def put(self, value: Any) -> None:
            self.puts += 1
            if self.puts == 2:
                self.clock.mark()

        def end(self) -> None:
            self.clock.mark()

    def run() -> Sample:
        marks, ids = Marks(), torch.tensor([prompt_ids])
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=tokens, min_new_tokens=tokens,
                                 pad_token_id=0, streamer=marks)
        return marks.clock.sample(out[0, len(prompt_ids):].tolist())

    return run


def built(folder: Path, quantize: str) -> Path:
    """``build-model`` of the exported decoder (fp32, or int4 weight-only); onnxruntime-genai
    is pointed at the same optimized file the handler loads (``manifest.model``)."""
    from rich.console import Console

    from handler.manifest import Manifest
    from onnx_lambda.build_model.builder import build
    from onnx_lambda.build_model.gate import Thresholds
    from onnx_lambda.build_model.spec import BuildOptions, ModelSpec

    target = folder.with_name(f"{folder.name}-{quantize}")
    if not (target / "model.json").exists():
        build(ModelSpec(source=folder / "model.onnx", name=target.name, pipeline="generate"),
              target, BuildOptions(quantize="none" if quantize == "fp32" else quantize,
                                   thresholds=Thresholds(token_agreement=0.0)),
              Console(stderr=True))
    config = json.loads((folder / "genai_config.json").read_text())
    config["model"]["decoder"]["filename"] = Manifest.load(target).model
    (target / "genai_config.json").write_text(json.dumps(config, indent=2))
    return target


def measure(targets: dict[str, Run], rounds: int) -> dict[str, list[Sample]]:
    names = list(targets)
    results: dict[str, list[Sample]] = {n: [targets[n]()] for n in names}  # warm-up runs
    for round_ in range(rounds):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            results[name].append(targets[name]())
    return {name: samples[1:] for name, samples in results.items()}


def medians(samples: list[Sample]) -> Sample:
    return Sample(*(statistics.median(getattr(s, f) for s in samples)
                    for f in Sample._fields[:4]), samples[0].tokens)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.generation",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=decoder.KINDS, default="llama")
    parser.add_argument("--size", choices=tuple(decoder.SIZES), default="small")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--int4", action="store_true")
    parser.add_argument("--no-pytorch", action="store_true")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/onnx-lambda-generation"))
    args = parser.parse_args(argv)
    size = decoder.SIZES[args.size]
    folder = args.workdir / f"{args.kind}-{args.size}"
    if not (folder / "model.onnx").exists():
        decoder.export(args.kind, args.size, folder, 0)
    fp32 = built(folder, "fp32")
    from handler.pipelines import tokenizer_files

    prompt_ids = tokenizer_files.load(str(folder / "tokenizer.json")).encode(PROMPT).ids
    targets: dict[str, Run] = {
        "ours fp32": ours(fp32, args.threads, PROMPT, args.tokens),
        "onnxruntime-genai fp32": genai(fp32, args.threads, prompt_ids, args.tokens)}
    if not args.no_pytorch:
        targets["transformers fp32 (PyTorch)"] = pytorch(args.kind, size, args.threads,
                                                         prompt_ids, args.tokens)
    if args.int4:
        int4 = built(folder, "int4")
        targets["ours int4"] = ours(int4, args.threads, PROMPT, args.tokens)
        targets["onnxruntime-genai int4"] = genai(int4, args.threads, prompt_ids, args.tokens)
    results = measure(targets, args.rounds)
    params = sum(p.numel() for p in decoder.build_torch(args.kind, size, 0).parameters()) \
        if not args.no_pytorch else None
    print(f"{args.kind} {args.size} ({params or '?'} parameters), prompt {len(prompt_ids)} "
          f"tokens, {args.tokens} new, {args.threads} thread(s), {args.rounds} rounds (medians)")
    print("load (in this process, best of 2): " + ", ".join(
        f"{name} {ms:.0f} ms" for name, ms in LOADS.items()))
    table = {name: medians(samples) for name, samples in results.items()}
    print(f"{'target':28s} {'TTFT ms':>8s} {'tok/s':>7s} {'÷genai':>6s} {'TTFT÷':>6s} | "
          f"{'CPU TTFT':>8s} {'tok/CPU-s':>9s} {'÷genai':>6s} {'TTFT÷':>6s} | same tokens")
    for name, row in table.items():
        base = table[f"onnxruntime-genai {'int4' if 'int4' in name else 'fp32'}"]
        same = row.tokens == table[name.replace("onnxruntime-genai", "ours")].tokens
        print(f"{name:28s} {row.ttft_ms:8.2f} {row.tps:7.1f} {row.tps / base.tps:6.2f} "
              f"{row.ttft_ms / base.ttft_ms:6.2f} | {row.cpu_ttft_ms:8.2f} {row.cpu_tps:9.1f} "
              f"{row.cpu_tps / base.cpu_tps:6.2f} {row.cpu_ttft_ms / base.cpu_ttft_ms:6.2f} | "
              f"{same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
