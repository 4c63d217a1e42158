"""A generation target in a process of its own, so that no target runs in memory laid out by
another's load.

Why: two 540 MB decoders loaded into one process do not decode at the same pace. On SmolLM2 (1
thread, the same ONNX file for both, the same kernels in the profile), whichever runtime loaded
*second* stepped ~15-20 % faster than the first, and swapping the load order swapped the winner
(``ours`` first: 53-60 ms a token against genai's 46-54; genai first: ours 41-50 against 50-60;
2026-12-07, this host). A decode step streams every weight from memory, so where the weights
landed matters more than which runtime runs them. One process per target, as a user runs it,
takes the load order out of the comparison.

    python -m benchmarks.target_worker ours|genai FOLDER THREADS

reads one JSON request a line on stdin, ``{"prompt": [ids], "new_tokens": n}`` (a generation,
answered with ``generation_targets.Run``'s fields) or ``{"encode": [lengths]}`` (``ours`` only:
prompt ids of those lengths, ``prompts``), and answers one JSON line each.
``Worker`` is the parent's side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.generation_targets import Run, Target, genai, ours, service, timed
from onnx_lambda.examples.sentences import SENTENCES


class Worker:
    """A target's process: ``timed`` runs one generation there and returns its ``Run``."""

    def __init__(self, kind: str, folder: Path, threads: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
            str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.target_worker", kind, str(folder), str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, request: dict[str, Any]) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the target worker ended (exit {self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the target worker failed: {answer['error']}")
        return answer["result"]

    def timed(self, prompt: list[int], new_tokens: int) -> Run:
        got = self.ask({"prompt": prompt, "new_tokens": new_tokens})
        return Run(got["ttft_ms"], got["total_ms"], tuple(got["tokens"]), got["cpu_ms"])

    def close(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()  # (stdin's end is the worker's cue to leave)
        self.process.wait(timeout=60)


def prompts(pipeline: Any, lengths: list[int]) -> dict[int, list[int]]:
    """The fixed sentences cut at each length (and re-encoded: ids a tokenizer gives back)."""
    text = " ".join(SENTENCES * (1 + max(lengths) // 8))
    ids = pipeline.encode(text)
    return {n: pipeline.encode(pipeline.tokenizer.decode(ids[:n], skip_special_tokens=True))
            for n in lengths}


def _serve(kind: str, folder: Path, threads: int) -> None:
    answers = os.fdopen(os.dup(1), "w")  # the JSON lines; anything else printed goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    built = service(folder, threads) if kind == "ours" else None
    if built is not None:
        built.pipeline.decoder.configure(0, 0)  # the same prompts again: no prefix reuse
    target: Target = ours(built) if built is not None else genai(folder)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "encode" in request:
                if built is None:
                    raise ValueError("only the ours worker encodes prompts")
                result: Any = list(prompts(built.pipeline, request["encode"]).values())
            else:
                result = timed(target, request["prompt"], request["new_tokens"])._asdict()
            answer = {"result": result}
        except Exception as exc:  # the parent reports it and stops
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    _serve(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
