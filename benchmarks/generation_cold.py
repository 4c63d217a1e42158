"""Cold init of a decoder, each target in a fresh process started as Lambda starts one
(``benchmarks.cold``: bytecode compiled first, ``python -S``, nothing preloaded), interleaved:

- ours: ``import handler.app`` with ``ONNX_LAMBDA_MODEL`` on the built folder (init: imports,
  session, tokenizer, warm-up prefill), then one ``/predict`` request for one token
  (``cold_process``; not part of the init figure);
- onnxruntime-genai: ``import onnxruntime_genai``, ``og.Model`` on the same file, one token
  (``baselines.genai_load``);
- the C-API floor: ``ctypes`` over libonnxruntime, a session on the same file with ours' options,
  one prefill of the same ids (``baselines.capi_floor``);
- the runtime alone: the C-API floor on a tiny model, whose peak RSS is the interpreter and
  onnxruntime's own, what a model's weights add to.

The init figure is ``cold.cold_init`` (imports + load + the first inference; the interpreter's
start left out); the memory figure each child's peak RSS (``VmHWM``, ``benchmarks.rss``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import cold
from handler.model import MB_PER_VCPU
from onnx_lambda.plan.subject import Subject, http_api_event
from onnx_lambda.plan.subject import prepare as prepare_subject
from onnx_lambda.stats import interleave, median


def memory_for(threads: int) -> int:
    """The function memory size whose vCPUs give ``threads`` intra-op threads."""
    return MB_PER_VCPU * threads


def subject(built: Any, folder: Path, workdir: Path) -> Subject:
    """The built decoder ``folder`` as the cold targets serve it: ours on the folder itself
    (its generate pipeline), the floor on the file ours loads at ours' optimization level;
    ``built`` (a service on the same folder) gives the warm-up's ids and the cache's shape."""
    pipeline, model = built.pipeline, built.model
    layout = pipeline.layout
    ids = pipeline.encode(pipeline.example())
    count = len(ids)
    inputs: dict[str, Any] = {"input_ids": [ids]}
    if layout.attention_mask:
        inputs["attention_mask"] = [[1] * count]
    if layout.position_ids:
        inputs["position_ids"] = [list(range(count))]
    empty = [1, layout.kv_heads, 0, layout.head_dim]
    past = [name for name in layout.inputs() if name not in inputs]
    request = {"inputs": {**inputs, **{name: [] for name in past}},
               "shapes": {name: empty for name in past}, "ids": ids}
    body = json.dumps({"inputs": pipeline.example(),
                       "parameters": {"max_tokens": 1, "temperature": 0}}).encode()
    workdir.mkdir(parents=True, exist_ok=True)
    made = Subject(folder.name, folder, folder.resolve(), folder / "model.onnx", body, workdir,
                   Path(model.artifact.path).resolve(), model.graph_optimization)
    made.request_file.write_text(json.dumps(request))
    made.event_file.write_text(json.dumps(http_api_event(body)))
    return made


def weights_bytes(made: Subject) -> int:
    """The file ours loads and its external data."""
    data = made.runtime_file.with_name(made.runtime_file.name + ".data")
    return made.runtime_file.stat().st_size + (data.stat().st_size if data.exists() else 0)


def scenarios(made: Subject, genai: Path, threads: int, label: str,
              levels: tuple[str, ...] = ()) -> dict[str, Any]:
    """``levels``: ours again with ``ONNX_LAMBDA_GRAPH_OPTIMIZATION`` at each."""
    memory = memory_for(threads)
    ids = ",".join(map(str, json.loads(made.request_file.read_text())["ids"]))
    runs: dict[str, Any] = {
        f"ours|{label}": lambda: cold.probe(made, "handler.app", memory, warm=0),
        f"onnxruntime-genai|{label}": lambda: cold.run_baseline(
            "benchmarks.baselines.genai_load", [str(genai), ids]),
        f"C-API floor|{label}": lambda: cold.floor(made, "capi_floor", memory),
    }
    for level in levels:
        runs[f"{ours_at(level)}|{label}"] = lambda level=level: cold.probe(
            made, "handler.app", memory, {"ONNX_LAMBDA_GRAPH_OPTIMIZATION": level}, warm=0)
    return runs


def ours_at(level: str) -> str:
    return f"ours, graph optimization {level}"


def measure(subjects: dict[str, tuple[Subject, Path]], threads: int, repeat: int,
            levels: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """``subjects``: label → (subject, onnxruntime-genai folder). Medians per ``target|label``:
    ``init_ms`` (``cold.cold_init``), ``rss_mb``, and per label ``weights_mb``; the runtime
    alone as ``runtime|tiny``."""
    runs: dict[str, Any] = {}
    scratch = Path(tempfile.mkdtemp(prefix="genbench-tiny-"))
    try:
        from onnx_lambda.tiny_models import linear

        tiny = prepare_subject(linear(scratch / "linear.onnx"))
        runs["runtime|tiny"] = lambda: cold.floor(tiny, "capi_floor", memory_for(threads))
        for label, (made, genai) in subjects.items():
            runs.update(scenarios(made, genai, threads, label, levels))
        results = interleave(runs, repeat)
        tiny.__exit__(None, None, None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    figures = {key: {"init_ms": median([cold.cold_init(r["breakdown"]) for r in got]),
                     "rss_mb": median([r["rss_mb"] for r in got])}
               for key, got in results.items()}
    for label, (made, _) in subjects.items():
        figures[f"weights|{label}"] = {"rss_mb": weights_bytes(made) / 2**20}
    return figures


def table(figures: dict[str, dict[str, float]], labels: list[str],
          levels: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """The cold-init table and the goals' verdicts (RSS ≤ 1.15× weights + the runtime's own)."""
    runtime = figures["runtime|tiny"]["rss_mb"]
    lines = ["| model | target | cold init ms | × genai | × C-API floor | peak RSS MB |"
             " RSS budget MB |", "|---|---|---:|---:|---:|---:|---:|"]
    verdicts = []
    for label in labels:
        weights = figures[f"weights|{label}"]["rss_mb"]
        budget = 1.15 * weights + runtime
        genai, floor = (figures[f"{t}|{label}"]["init_ms"]
                        for t in ("onnxruntime-genai", "C-API floor"))
        for target in ("ours", *map(ours_at, levels), "onnxruntime-genai", "C-API floor"):
            got = figures[f"{target}|{label}"]
            lines.append(f"| {label} ({weights:.0f} MB of weights) | {target} | "
                         f"{got['init_ms']:.0f} | {got['init_ms'] / genai:.2f}× | "
                         f"{got['init_ms'] / floor:.2f}× | {got['rss_mb']:.0f} | {budget:.0f} |")
        rss = figures[f"ours|{label}"]["rss_mb"]
        verdicts.append(f"{label}: peak RSS {rss:.0f} MB vs 1.15 × {weights:.0f} + {runtime:.0f}"
                        f" = {budget:.0f} MB: {'met' if rss <= budget else 'MISSED'}")
    lines.append(f"| (runtime alone: the C-API floor on a tiny model) | | "
                 f"{figures['runtime|tiny']['init_ms']:.0f} | | | {runtime:.0f} | |")
    return "\n".join(lines), verdicts
