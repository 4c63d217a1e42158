"""Generation at batch 1: time to first token and tokens/s of the handler's ``generate`` pipeline
against onnxruntime-genai (the same ONNX file) and transformers on PyTorch (the same weights),
fp32 and int4, at the same threads; then the cold init of each, in fresh processes.

    python -m benchmarks.generation [--size realistic] [--workdir DIR] [--threads 1,2]
        [--prompt-tokens 32,256] [--new-tokens 64] [--rounds 3] [--cold-repeat 3]
        [--no-cold | --cold-only] [--ours-level all]

Results and what they mean: docs/explanation/generation-performance.md.

The model is ``onnx_lambda.examples.decoder``'s Llama-style decoder with random weights (seed 0)
at ``--size`` (``realistic``: vocabulary 32,000, hidden 1,024, 16 layers, 16 query and 4
key/value heads, MLP 2,816: about 246 M parameters, 0.98 GB in fp32), exported once into the
work folder (``$XDG_CACHE_HOME/onnx-lambda/bench-decoder`` unless ``--workdir``), then built by
``build-model``'s builder as fp32 and as int4 weight-only (RTN, block 32; random weights have
near-flat logits and fail the int4 token-agreement gate, so it is lowered to 0: speed is what
is measured here). Later runs reuse the folder.

Throughput (one process, per thread count): every target loaded once, one untimed run per
prompt (its tokens compared across targets), then ``--rounds`` rounds of every prompt through
every target, the target order rotated each round. Greedy, ``--new-tokens`` tokens (fewer only
at EOS). TTFT: prompt ids in → first token id out; tokens/s: the tokens after the first over the
time after the first; CPU ms per token: the process's CPU time (all threads) over the run.
Ratios are medians over medians, against onnxruntime-genai at the same precision, threads and
prompt, and against PyTorch fp32. At more than one thread onnxruntime-genai runs twice: as it
comes (its pool's threads spin between steps) and with spinning off, as the handler sets it for
Lambda's CPU quota. Goals (issue 27): tokens/s ≥ 0.95× and TTFT ≤ 1.05×
onnxruntime-genai's, tokens/s ≥ 3× PyTorch's for int4. Cold init: ``generation_cold``.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import generation_cold, generation_targets
from benchmarks.embeddings_throughput import machine
from benchmarks.generation_targets import Run, Target, timed
from onnx_lambda.examples import decoder
from onnx_lambda.examples.sentences import SENTENCES
from onnx_lambda.stats import median

KIND, SEED = "llama", 0
PRECISIONS = {"fp32": "none", "int4": "int4"}  # build-model's --quantize for each
GENAI, PYTORCH = "onnxruntime-genai", "PyTorch fp32"
NO_SPIN = ", spinning off"  # genai with the handler's thread-pool setting (threads > 1 only)
LEVEL = "graph optimization "  # ours at another ONNX_LAMBDA_GRAPH_OPTIMIZATION (--ours-level)


def default_workdir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "onnx-lambda" / "bench-decoder"


def build(workdir: Path, size: str) -> dict[str, Path]:
    """``source`` (the export) and one built folder per precision, made once: what
    ``onnx-lambda build-model source/model.onnx -o PRECISION --quantize METHOD
    --min-token-agreement 0`` makes."""
    from rich.console import Console

    from onnx_lambda.build_model.builder import build as build_model
    from onnx_lambda.build_model.gate import Thresholds
    from onnx_lambda.build_model.spec import BuildOptions, ModelSpec

    folder = workdir / f"{KIND}-{size}-s{SEED}"
    source = folder / "source"
    if not (source / "model.onnx").exists():  # (written once the export passed its check)
        print(f"exporting the {size} decoder into {source} ...", file=sys.stderr)
        decoder.export(KIND, size, source, SEED)
    folders = {"source": source}
    for precision, method in PRECISIONS.items():
        out = folder / precision
        if not (out / "model.json").exists():
            shutil.rmtree(out, ignore_errors=True)
            build_model(ModelSpec(source=source / "model.onnx", name=precision),
                        out, BuildOptions(quantize=method,
                                          thresholds=Thresholds(token_agreement=0.0)),
                        Console(stderr=True))
        folders[precision] = out
    return folders


def prompts(built: Any, lengths: list[int]) -> dict[int, list[int]]:
    """A prompt of about each length: the fixed sentences' ids cut there, decoded to text and
    encoded again (the route gets the text: every target then reads the same ids)."""
    pipeline = built.pipeline
    text = " ".join(SENTENCES * (1 + max(lengths) // 8))
    ids = pipeline.encode(text)
    out = {}
    for length in lengths:
        cut = pipeline.tokenizer.decode(ids[:length], skip_special_tokens=True)
        out[length] = pipeline.encode(cut)
    return out


def decode_text(built: Any) -> Any:
    return lambda ids: built.pipeline.tokenizer.decode(ids, skip_special_tokens=True)


def targets(folders: dict[str, Path], threads: int, workdir: Path, torch_target: Target,
            levels: tuple[str, ...] = ()) -> tuple[dict[str, Target], Any]:
    """Every target at ``threads``, and ours' fp32 service (its tokenizer makes the prompts);
    ``levels``: ours again at each of these graph-optimization levels, as more rows."""
    made: dict[str, Target] = {}
    services = {}
    for precision in PRECISIONS:
        built = services[precision] = generation_targets.service(folders[precision], threads)
        made[f"ours {precision}"] = generation_targets.ours(built)
        for level in levels:
            made[f"ours {precision}, {LEVEL}{level}"] = generation_targets.ours(
                generation_targets.service(folders[precision], threads, level))
        made[f"ours {precision} /v1/completions"] = generation_targets.completions_route(
            built, decode_text(built))
        genai = generation_targets.genai_folder(folders[precision], folders["source"], threads,
                                                workdir / f"genai-{precision}-t{threads}")
        made[f"{GENAI} {precision}"] = generation_targets.genai(genai)
        if threads > 1:
            still = generation_targets.genai_folder(
                folders[precision], folders["source"], threads,
                workdir / f"genai-{precision}-t{threads}-nospin", spinning=False)
            made[f"{GENAI} {precision}{NO_SPIN}"] = generation_targets.genai(still)
    made[PYTORCH] = torch_target
    return made, services["fp32"]


def measure(made: dict[str, Target], asked: dict[int, list[int]], new_tokens: int,
            rounds: int) -> tuple[dict[tuple[str, int], list[Run]], dict[int, dict[str, Any]]]:
    first = {length: {name: timed(target, ids, new_tokens).tokens
                      for name, target in made.items()} for length, ids in asked.items()}
    runs: dict[tuple[str, int], list[Run]] = {(n, length): [] for n in made for length in asked}
    names = list(made)
    for round_ in range(rounds):
        for length, ids in asked.items():
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                runs[(name, length)].append(timed(made[name], ids, new_tokens))
    return runs, first


def agreement(first: dict[str, tuple[int, ...]]) -> str:
    """Which targets produced the same greedy tokens as which (the route's ids are not kept)."""
    lines = []
    for precision in PRECISIONS:
        ours, genai = first[f"ours {precision}"], first[f"{GENAI} {precision}"]
        lines.append(f"{precision}: ours {len(ours)} tokens, genai {len(genai)}, "
                     f"{_same(ours, genai)} as genai's")
    lines.append(f"fp32: ours {_same(first['ours fp32'], first[PYTORCH])} as PyTorch's")
    return "; ".join(lines)


def _same(a: tuple[int, ...], b: tuple[int, ...]) -> str:
    prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
    return "the same tokens" if a == b else f"the first {prefix} tokens the same"


def rows(runs: dict[tuple[str, int], list[Run]], threads: int, asked: dict[int, list[int]]
         ) -> tuple[list[str], list[str]]:
    """Table rows and goal verdicts for one thread count."""
    def fig(name: str, length: int) -> tuple[float, float, float]:
        got = runs[(name, length)]
        return (median([r.ttft_ms for r in got]), median([r.tokens_per_s for r in got]),
                median([r.cpu_ms / len(r.tokens) for r in got]))

    lines, verdicts = [], []
    for length, ids in asked.items():
        torch_tps = fig(PYTORCH, length)[1]
        for name in sorted({n for n, _ in runs}, key=_order):
            ttft, tps, cpu = fig(name, length)
            precision = "int4" if "int4" in name else "fp32"
            genai_ttft, genai_tps, _ = fig(f"{GENAI} {precision}", length)
            versus = (f"{ttft / genai_ttft:.2f}× | {tps / genai_tps:.2f}×"
                      if name != PYTORCH else " | ")
            lines.append(f"| {threads} | {len(ids)} | {name} | {ttft:.1f} | {tps:.1f} | "
                         f"{cpu:.1f} | {versus} | {tps / torch_tps:.2f}× |")
            if name.startswith("ours") and "/v1" not in name:
                verdict = _verdict(name, threads, len(ids), ttft / genai_ttft, tps / genai_tps,
                                   tps / torch_tps)
                if (f"{GENAI} {precision}{NO_SPIN}", length) in runs:
                    still_ttft, still_tps, _ = fig(f"{GENAI} {precision}{NO_SPIN}", length)
                    verdict += (f"; against genai{NO_SPIN}: tokens/s {tps / still_tps:.2f}×, "
                                f"TTFT {ttft / still_ttft:.2f}×")
                verdicts.append(verdict)
    return lines, verdicts


def _order(name: str) -> tuple[int, str]:
    return (2 if name == PYTORCH else 1 if "int4" in name else 0, name)


def _verdict(name: str, threads: int, length: int, ttft: float, tps: float, torch: float
             ) -> str:
    goals = [f"tokens/s {tps:.2f}× genai (≥ 0.95: {'met' if tps >= 0.95 else 'MISSED'})",
             f"TTFT {ttft:.2f}× (≤ 1.05: {'met' if ttft <= 1.05 else 'MISSED'})"]
    if "int4" in name:
        goals.append(f"{torch:.2f}× PyTorch fp32 (≥ 3: {'met' if torch >= 3 else 'MISSED'})")
    return f"{name}, {threads} thread(s), {length}-token prompt: " + "; ".join(goals)


HEADER = ("| threads | prompt tokens | target | TTFT ms | tokens/s | CPU ms / token | "
          "TTFT × genai | tokens/s × genai | tokens/s × PyTorch |\n"
          "|---:|---:|---|---:|---:|---:|---:|---:|---:|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(decoder.SIZES), default="realistic")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the decoder is built once (default: the user's cache)")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts")
    parser.add_argument("--prompt-tokens", default="32,256")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold-repeat", type=int, default=3)
    parser.add_argument("--no-cold", action="store_true", help="throughput only")
    parser.add_argument("--cold-only", action="store_true", help="cold init only")
    parser.add_argument("--ours-level", action="append", default=[],
                        choices=("disable", "basic", "extended", "all"),
                        help="ours again with ONNX_LAMBDA_GRAPH_OPTIMIZATION at this level (the "
                             "default loads the artifact's offline-optimized file as it is)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    workdir = args.workdir or default_workdir()
    folders = build(workdir, args.size)
    threads = [int(t) for t in args.threads.split(",")]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
          f"{generation_targets.versions()}")
    if not args.cold_only:
        throughput(args, folders, workdir, threads)
    if not args.no_cold:
        cold(folders, workdir, threads[-1], args.cold_repeat, tuple(args.ours_level))
    return 0


def throughput(args: argparse.Namespace, folders: dict[str, Path], workdir: Path,
               thread_counts: list[int]) -> None:
    import torch

    size = decoder.SIZES[args.size]
    torch.set_num_interop_threads(1)
    torch_model = decoder.build_torch(KIND, size, SEED)  # one model; threads set on every call
    params = sum(p.numel() for p in torch_model.parameters())
    print(f"decoder: {KIND} {args.size} {tuple(size)} = {params / 1e6:.1f} M parameters, "
          f"{folders['source']}; greedy, batch 1, {args.new_tokens} new tokens, "
          f"{args.rounds} rounds")
    lines, verdicts = [HEADER], []
    for threads in thread_counts:
        made, tokenizing = targets(folders, threads, workdir,
                                   generation_targets.pytorch(torch_model, threads),
                                   tuple(args.ours_level))
        asked = prompts(tokenizing, [int(n) for n in args.prompt_tokens.split(",")])
        runs, first = measure(made, asked, args.new_tokens, args.rounds)
        for length, tokens in first.items():
            print(f"greedy tokens, {threads} thread(s), {length}-token prompt: "
                  f"{agreement(tokens)}")
        got_lines, got_verdicts = rows(runs, threads, asked)
        lines += got_lines
        verdicts += got_verdicts
        del made, tokenizing, runs
        gc.collect()
    print(f"load at the end {os.getloadavg()[0]:.2f}\n")
    print("\n".join(lines), "", *verdicts, sep="\n")


def cold(folders: dict[str, Path], workdir: Path, threads: int, repeat: int,
         levels: tuple[str, ...]) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="genbench-cold-"))
    try:
        subjects = {}
        for precision in PRECISIONS:
            built = generation_targets.service(folders[precision], threads)
            genai = generation_targets.genai_folder(
                folders[precision], folders["source"], threads,
                workdir / f"genai-{precision}-t{threads}")
            subjects[precision] = (generation_cold.subject(built, folders[precision],
                                                           scratch / precision), genai)
            del built
        gc.collect()
        figures = generation_cold.measure(subjects, threads, repeat, levels)
        text, verdicts = generation_cold.table(figures, list(PRECISIONS), levels)
        print(f"\ncold init, {threads} thread(s) (memory {generation_cold.memory_for(threads)} "
              f"MB), medians of {repeat} fresh processes each, interleaved\n")
        print(text, "", *verdicts, sep="\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
