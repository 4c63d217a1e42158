"""The GPU check ``scripts/gpu-check`` runs on a machine with an NVIDIA GPU: CPU vs CUDA parity
and a GPU latency table for ``onnx-lambda tune --managed-instances --gpu-table``.

    python -m benchmarks.gpu_check --out gpu-table.json [--work DIR]

1. Probe: the device node, ``nvidia-smi``'s GPU name and driver, and whether the importable
   onnxruntime offers ``CUDAExecutionProvider``. Without all three it writes a table with
   ``measured: false`` and the reason, and exits 3 ("no CUDA device"): nothing is claimed.
2. Models (fp32, built there with torch + transformers, no download): ``minilm`` (the
   all-MiniLM-L6-v2 architecture: 6 layers, 384 wide) and ``bert-base`` (12 layers, 768 wide),
   weights random (latency and parity depend on the shapes, not the values), each ending in
   mean pooling + L2 normalisation, exported with ``dynamo=True``.
3. Per model: the handler (``handler.app``, its C-API runtime, ``ONNX_LAMBDA_EXECUTION_PROVIDER``
   ``cuda``) answers a 16-token request in ``--processes`` processes at once (as a Managed
   Instances environment's processes share one GPU), ``--requests`` each after ``--warmup``;
   p50/p99 of the handler's own time per request and the rate all processes sustained; its
   first answer against onnxruntime's CPU provider on the same input (``ATOL``/``RTOL``).
   The same requests on the CPU provider (``cpu`` row) are the on-machine reference.

Exit status: 0 measured with parity, 1 parity failed, 3 no CUDA device.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from onnx_lambda.plan.gpu_compare import FORMAT, probe

ATOL, RTOL = 1e-4, 1e-3  # fp32 across providers: kernels sum in other orders
SEQUENCE = 16
SHAPES = {"minilm": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
                     "intermediate_size": 1536},
          "bert-base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                        "intermediate_size": 3072}}
NO_DEVICE = 3
WORKER = """
import json, sys, time
import handler.app as app
from onnx_lambda.lambda_context import LambdaContext
event, count, warmup = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for _ in range(max(1, warmup)):  # the first answer is the one checked for parity
    first = app.handler(event, LambdaContext())
print("ready", flush=True)
sys.stdin.readline()
times = []
for _ in range(count):
    t = time.perf_counter()
    app.handler(event, LambdaContext())
    times.append((time.perf_counter() - t) * 1e3)
print(json.dumps({"ms": times, "answer": json.loads(first["body"]),
                  "provider": app.SERVICE.model.provider.provider}), flush=True)
"""


def table(found: dict[str, Any], models: list[dict[str, Any]]) -> dict[str, Any]:
    measured = "reason" not in found
    return {"format": FORMAT, "measured": measured, "reason": found.get("reason"),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "scripts/gpu-check", "host": platform.node(),
            "device": {"name": found["gpu"], "driver": found["driver"]} if measured else None,
            "onnxruntime": found["onnxruntime"], "providers": found["providers"],
            "sequence": SEQUENCE, "models": models}


def build(name: str, out: Path) -> Path:
    """An fp32 encoder of ``SHAPES[name]`` with random weights, mean-pooled, L2-normalised."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=30522, **SHAPES[name])).eval()

    class Pooled(torch.nn.Module):
        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    ids = torch.randint(1000, 2000, (1, SEQUENCE))
    path = out / f"{name}.onnx"
    torch.onnx.export(Pooled(), (ids, torch.ones_like(ids)), str(path), dynamo=True,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["sentence_embedding"], external_data=False)
    return path


def request(rows: int = 1) -> dict[str, Any]:
    ids = [[101, *range(2000, 2000 + SEQUENCE - 2), 102]] * rows
    return {"input_ids": ids, "attention_mask": [[1] * SEQUENCE] * rows}


def serve(model: Path, provider: str, *, processes: int, requests: int,
          warmup: int) -> dict[str, Any]:
    """``processes`` handler processes on ``model`` answering at once; their timings."""
    from onnx_lambda.plan.subject import http_api_event
    from onnx_lambda.stats import percentile

    event = http_api_event(json.dumps({"inputs": request()}).encode())
    env = {**os.environ, "ONNX_LAMBDA_MODEL": str(model), "ONNX_LAMBDA_METRICS": "0",
           "ONNX_LAMBDA_EXECUTION_PROVIDER": provider, "ONNX_LAMBDA_LOG_LEVEL": "warning",
           "AWS_LAMBDA_MAX_CONCURRENCY": str(processes)}
    children = [subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(event),
                                  str(requests), str(warmup)], env=env, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                for _ in range(processes)]
    for child in children:  # every one initialised and warm before any is timed
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError(f"a {provider} handler process on {model.name} failed to start")
    started = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    results = [json.loads(child.communicate(timeout=600)[0].splitlines()[-1])
               for child in children]
    wall = time.perf_counter() - started
    samples = [ms for r in results for ms in r["ms"]]
    return {"provider": results[0]["provider"], "processes": processes,
            "requests": len(samples), "p50_ms": percentile(samples, 50),
            "p99_ms": percentile(samples, 99), "rps": len(samples) / wall,
            "answer": results[0]["answer"]}


def parity(model: Path, answer: dict[str, Any]) -> dict[str, Any]:
    """The handler's CUDA answer against onnxruntime's CPU provider on the same input."""
    import numpy as np
    import onnxruntime

    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feeds = {k: np.asarray(v, dtype=np.int64) for k, v in request().items()}
    want = session.run(None, feeds)[0]
    got = np.asarray(answer["outputs"]["sentence_embedding"], dtype=np.float32)
    diff = float(np.max(np.abs(got - want)))
    cosine = float(np.sum(got * want) / (np.linalg.norm(got) * np.linalg.norm(want)))
    return {"max_abs_diff": diff, "cosine": cosine, "atol": ATOL, "rtol": RTOL,
            "ok": bool(np.allclose(got, want, atol=ATOL, rtol=RTOL))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpu-check"))
    parser.add_argument("--models", default=",".join(SHAPES))
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200, help="per process")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)
    if min(args.processes, args.requests) < 1:
        parser.error("--processes and --requests must be at least 1")
    found = probe()
    rows: list[dict[str, Any]] = []
    if "reason" in found:
        args.out.write_text(json.dumps(table(found, rows), indent=2) + "\n")
        print(f"gpu-check: not measured: {found['reason']} (wrote {args.out})")
        return NO_DEVICE
    args.work.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        model = build(name, args.work)
        runs = {p: serve(model, p, processes=args.processes, requests=args.requests,
                         warmup=args.warmup) for p in ("cuda", "cpu")}
        check = parity(model, runs["cuda"]["answer"])
        rows.append({"name": name, "weights": "random (the architecture's shapes)",
                     "parity": check, **{p: {k: v for k, v in r.items() if k != "answer"}
                                         for p, r in runs.items()}})
        print(f"gpu-check {name}: cuda p50 {runs['cuda']['p50_ms']:.2f} p99 "
              f"{runs['cuda']['p99_ms']:.2f} ms {runs['cuda']['rps']:.0f} rps; cpu p50 "
              f"{runs['cpu']['p50_ms']:.2f} ms; parity max |diff| {check['max_abs_diff']:.2e} "
              f"{'ok' if check['ok'] else 'FAILED'}", flush=True)
    args.out.write_text(json.dumps(table(found, rows), indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["parity"]["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
