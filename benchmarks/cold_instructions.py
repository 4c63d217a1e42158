"""Cold init in CPU instructions (callgrind, main thread): the cold-start verdict that
wall-clock on a shared VM cannot give (the same tree measured 1.09× to 1.66× the C-API floor
between two runs a minute apart).

    python -m benchmarks.cold_instructions [--model models/digits] [--memory 1769]

Each target is one fresh interpreter started as ``cold`` starts its children (``python
-S``, bytecode compiled, the task root and the packages on ``PYTHONPATH``) and run to its first
inference done, under ``valgrind --tool=callgrind --separate-threads=yes``; only the main
thread is counted (ORT's pool threads' spin-up varies by up to 150 M instructions from run to
run). Every target is a ``-c`` statement, so that none pays for ``runpy`` or a probe:
- bare interpreter: ``pass`` (subtracted from the others: the interpreter's own start-up is the
  same for every target, and ``cold.cold_init`` leaves it out too);
- numpy floor: ``baselines.floor``'s ``main`` (``import numpy, onnxruntime``, a session on the
  portable model with default options, one run);
- C-API floor: ``baselines.capi_floor``'s ``main`` (ctypes over libonnxruntime, the file ours
  loads with ours' session options and threads, one run);
- onnx-lambda: ``import handler.app`` (settings, artifact, session, pipeline, warm-up), on the
  artifact relabelled as a tensor pipeline, as ``python -m benchmarks`` serves it (the floors run
  no pipeline); for an artifact with a pipeline of its own (a classifier's labels, MiniLM's
  tokenizer), a second row serves it as built (``OURS_AS_BUILT``).
The floors print their report line after their last mark and ours its ``initialized`` log
line; both are counted (a few hundred thousand instructions). ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import cold
from benchmarks.targets import CAPI_FLOOR, FLOOR, OURS
from handler.manifest import Manifest
from handler.model import threads_for, visible_cpus
from onnx_lambda.plan.bytecode import compile_shipped
from onnx_lambda.plan.subject import Subject, prepare
from onnx_lambda.source_tree import root

BARE = "bare interpreter"
OURS_AS_BUILT = f"{OURS}, its own pipeline"
_TOTALS = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)


def statements(subject: Subject, memory_mb: int) -> dict[str, tuple[str, dict[str, str]]]:
    """Each target's ``python -S -c`` program and the variables it runs with (on top of
    ``Subject.environment``)."""
    threads = threads_for(memory_mb, visible_cpus())
    capi = (str(subject.runtime_file), str(subject.request_file),
            subject.runtime_optimization, threads)
    targets = {
        BARE: ("pass", {}),
        FLOOR: ("from benchmarks.baselines.floor import main; "
                f"main({str(subject.portable)!r}, {str(subject.request_file)!r})", {}),
        CAPI_FLOOR: (f"from benchmarks.baselines.capi_floor import main; main{capi!r}",
                     {}),
        OURS: ("import handler.app", {}),
    }
    if subject.source.is_dir() and Manifest.load(subject.source).pipeline != "tensor":
        targets[OURS_AS_BUILT] = ("import handler.app",
                                  {"ONNX_LAMBDA_MODEL": str(subject.source.resolve())})
    return targets


def main_thread(program: str, env: dict[str, str], folder: Path) -> int:
    """Instructions the main thread of ``python -S -c program`` executes, start to exit."""
    out = folder / "callgrind.out"
    prefix, base = cold.interpreter()
    done = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                           f"--callgrind-out-file={out}", *prefix, "-c", program],
                          capture_output=True, text=True, cwd=root(),
                          env={**os.environ, **base, **env, "PYTHONHASHSEED": "0"})
    if done.returncode:
        raise RuntimeError(f"{program!r} failed under callgrind: {done.stderr[-1500:]}")
    found = _TOTALS.search(Path(f"{out}-01").read_text())
    if found is None:
        raise RuntimeError(f"{out}-01: no totals line")
    return int(found.group(1))


def measure(subject: Subject, memory_mb: int, repeat: int, only: Collection[str] = (),
            jobs: int = 1) -> dict[str, int]:
    """Each target's main-thread instructions (the fewest of ``repeat`` runs, interleaved);
    ``only``: these targets (default: all). ``jobs``: callgrind processes side by side (a
    count is one thread's own instructions, the same whatever runs beside it)."""
    compile_shipped()
    env = {**subject.environment(memory_mb), "ONNX_LAMBDA_LOG_LEVEL": "warning"}
    targets = [(name, program, variables) for name, (program, variables)
               in statements(subject, memory_mb).items() if not only or name in only]

    def count(target: tuple[str, str, dict[str, str]]) -> int:
        with tempfile.TemporaryDirectory() as folder:
            return main_thread(target[1], {**env, **target[2]}, Path(folder))

    best: dict[str, int] = {}
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for _ in range(repeat):
            for (name, _, _), found in zip(targets, pool.map(count, targets), strict=True):
                best[name] = min(best.get(name, found), found)
    return best


def report(model: Path, memory_mb: int, repeat: int) -> str:
    with prepare(model) as subject:
        counts = measure(subject, memory_mb, repeat)
    bare = counts[BARE]
    init = {name: count - bare for name, count in counts.items() if name != BARE}
    lines = [f"model: {model} ({memory_mb} MB: {threads_for(memory_mb, visible_cpus())} "
             f"intra-op thread(s); callgrind, main thread, fewest of {repeat})", "",
             "| cold init | instructions (M) | × numpy floor | × C-API floor |",
             "|---|---|---|---|",
             f"| {BARE} (start-up, subtracted) | {bare / 1e6:.1f} | | |"]
    for name, count in init.items():
        lines.append(f"| {name} | {count / 1e6:.1f} | {count / init[FLOOR]:.2f}× | "
                     f"{count / init[CAPI_FLOOR]:.2f}× |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=root() / "models" / "digits")
    parser.add_argument("--memory", type=int, default=1769, help="MB (sets the threads)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    print(report(args.model, args.memory, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
