"""What ``benchmarks.generation`` times: one greedy generation at batch 1 on each runtime, the
same prompt ids and the same number of new tokens, with the moment each token arrives.

A target is ``run(prompt_ids, new_tokens, on_tokens)``: it generates greedily and calls
``on_tokens(ids)`` as soon as each step's token ids are known (``timed`` stamps them). Every
runtime runs the prefill and then one forward pass per token after the first, stops at the
model's EOS or after ``new_tokens``, and keeps its cache its own way:
- ours: the handler's ``generate`` pipeline (C API, the cache as OrtValues), its ``generate()``
  called in process; the OpenAI ``/v1/completions`` route around it (an API Gateway event in
  process: JSON, tokenizing the prompt text, the answer, telemetry) where the tree has it;
- onnxruntime-genai: ``og.Model`` on the same ONNX file ours loads (a folder of links to the
  artifact's file plus a ``genai_config.json`` naming it), ``og.Generator`` token by token;
- transformers on PyTorch fp32: ``generate(do_sample=False)`` with a streamer, the same random
  weights (the decoder example's seed).
"""

from __future__ import annotations

import io
import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from benchmarks.openai_vs_predict import event as http_api_event


class OnTokens(Protocol):
    def __call__(self, ids: Sequence[int], at: float | None = None) -> None:
        """``ids`` arrived now, or at ``at`` (a ``time.perf_counter`` value in the past)."""


Target = Callable[[list[int], int, OnTokens], None]


class Run(NamedTuple):
    ttft_ms: float  # prompt ids in → first new token id out
    total_ms: float
    tokens: tuple[int, ...]
    cpu_ms: float  # the process's CPU time over the run (all threads: what Lambda bills)

    @property
    def tokens_per_s(self) -> float:
        """Decode pace: the tokens after the first over the time after the first."""
        decode = self.total_ms - self.ttft_ms
        return (len(self.tokens) - 1) / decode * 1000.0 if decode > 0 else float("nan")


def timed(target: Target, prompt: list[int], new_tokens: int) -> Run:
    tokens: list[int] = []
    first: list[float] = []

    def on_tokens(ids: Sequence[int], at: float | None = None) -> None:
        if not first:
            first.append(time.perf_counter() if at is None else at)
        tokens.extend(int(i) for i in ids)

    cpu, started = time.process_time(), time.perf_counter()
    target(prompt, new_tokens, on_tokens)
    end, cpu_ms = time.perf_counter(), (time.process_time() - cpu) * 1000.0
    if not first:
        raise RuntimeError("the target produced no token")
    return Run((first[0] - started) * 1000.0, (end - started) * 1000.0, tuple(tokens), cpu_ms)


def service(model: Path, threads: int, graph_optimization: str = "auto") -> Any:
    """The real handler as Lambda builds it (warm-up included) on ``threads`` intra-op threads,
    its logs discarded; ``graph_optimization``: ``ONNX_LAMBDA_GRAPH_OPTIMIZATION``."""
    from handler.bootstrap import create
    from handler.settings import Settings

    built = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model),
                                      "ONNX_LAMBDA_METRICS": "0",
                                      "ONNX_LAMBDA_THREADS": str(threads),
                                      "ONNX_LAMBDA_GRAPH_OPTIMIZATION": graph_optimization}))
    built.telemetry.stream = io.StringIO()
    return built


def ours(built: Any) -> Target:
    """The pipeline's ``generate()``: the decode loop every route streams from."""
    from handler.generation.params import GenerationParams

    def run(prompt: list[int], new_tokens: int, on_tokens: OnTokens) -> None:
        params = GenerationParams(max_tokens=new_tokens, temperature=0.0)
        for step in built.pipeline.generate(prompt, params, lambda: False):
            on_tokens(step.token_ids)

    return run


def completions_route(built: Any, decode: Callable[[list[int]], str]) -> Target:
    """``POST /v1/completions`` (``stream: false``) in process: the prompt goes as text (its
    ids decoded), so the route tokenizes it again; the first token's moment is the answer's
    ``Server-Timing`` ``ttft``, the token count its ``usage``."""
    from onnx_lambda.lambda_context import LambdaContext

    def run(prompt: list[int], new_tokens: int, on_tokens: OnTokens) -> None:
        body = {"model": built.model.name, "prompt": decode(prompt), "max_tokens": new_tokens,
                "temperature": 0}
        event = http_api_event("/v1/completions", body)
        started = time.perf_counter()
        answer = built(event, LambdaContext("bench", 600_000))
        if answer["statusCode"] != 200:
            raise RuntimeError(f"/v1/completions: {answer['statusCode']} {answer['body'][:300]}")
        headers = {k.lower(): v for k, v in answer["headers"].items()}
        ttft = server_timing(headers.get("server-timing", ""), "ttft")
        # the first token at its own moment, the rest when the answer is back
        on_tokens([0], at=started + ttft / 1000.0)
        count = json.loads(answer["body"])["usage"]["completion_tokens"]
        on_tokens([0] * (count - 1))

    return run


def server_timing(header: str, name: str) -> float:
    """``name``'s ``dur`` (ms) in a ``Server-Timing`` header."""
    for metric in header.split(","):
        parts = [p.strip() for p in metric.split(";")]
        if parts[0] == name:
            for part in parts[1:]:
                if part.startswith("dur="):
                    return float(part[4:])
    raise RuntimeError(f"no {name} in Server-Timing: {header!r}")


def genai_folder(artifact: Path, source: Path, threads: int, dest: Path,
                 spinning: bool = True) -> Path:
    """A folder onnxruntime-genai opens: links to the file the artifact's manifest names (and
    its external data) and the source's ``genai_config.json`` pointed at it, with ``threads``
    intra-op threads; its other session options stay genai's defaults (all graph
    optimizations, the pool's threads spinning between steps) unless ``spinning`` is False:
    then ``session.intra_op.allow_spinning`` 0, as the handler sets it."""
    manifest = json.loads((artifact / "model.json").read_text())
    dest.mkdir(parents=True, exist_ok=True)
    for name in (manifest["model"], manifest["model"] + ".data"):
        if (artifact / name).exists() and not (dest / name).exists():
            (dest / name).symlink_to((artifact / name).resolve())
    config = json.loads((source / "genai_config.json").read_text())
    decoder = config["model"]["decoder"]
    decoder["filename"] = manifest["model"]
    decoder["session_options"]["intra_op_num_threads"] = threads
    if not spinning:  # (genai passes session options it does not know as config entries)
        decoder["session_options"]["session.intra_op.allow_spinning"] = "0"
    (dest / "genai_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return dest


def genai(folder: Path) -> Target:
    import onnxruntime_genai as og

    model = og.Model(str(folder))

    def run(prompt: list[int], new_tokens: int, on_tokens: OnTokens) -> None:
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(prompt) + new_tokens, do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt)
        while not generator.is_done():
            generator.generate_next_token()
            on_tokens(generator.get_next_tokens())
        del generator

    return run


def pytorch(model: Any, threads: int) -> Target:
    """transformers' greedy ``generate`` on ``model`` (``decoder.build_torch``: the example's
    weights for the export's seed), fp32, ``threads`` intra-op threads."""
    import torch
    from transformers.generation.streamers import BaseStreamer

    class Stream(BaseStreamer):  # type: ignore[misc]
        def __init__(self, on_tokens: OnTokens) -> None:
            self.on_tokens, self.prompt_seen = on_tokens, False

        def put(self, value: Any) -> None:
            if self.prompt_seen:  # (the first put is the prompt)
                self.on_tokens(value.reshape(-1).tolist())
            self.prompt_seen = True

        def end(self) -> None:
            pass

    def run(prompt: list[int], new_tokens: int, on_tokens: OnTokens) -> None:
        torch.set_num_threads(threads)
        ids = torch.tensor([prompt])
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # generation-config notices
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                           do_sample=False, pad_token_id=0, streamer=Stream(on_tokens))

    return run


def versions() -> str:
    import onnxruntime
    import onnxruntime_genai
    import torch
    import transformers

    return (f"onnxruntime {onnxruntime.__version__}, onnxruntime-genai "
            f"{onnxruntime_genai.__version__}, torch {torch.__version__}, transformers "
            f"{transformers.__version__}; {os.cpu_count()} vCPUs")
