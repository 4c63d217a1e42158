"""Cost of the OpenAI (``/v1/embeddings``) and TEI (``/embed``) shapes over ``/predict`` on a
text-embedding model: the handler's whole time per request (decode, tokenize, run, encode),
routes interleaved in one process, and the answer's bytes, at batch 1 and 32.

    python benchmarks/openai_vs_predict.py MODEL_FOLDER [--runs 300]

CPU instructions (these hosts' timings swing 2x): warm every route, then run one route N
times, under callgrind; a route's cost per request is (count with N - count with 0) / N:

    TOKENIZERS_PARALLELISM=false valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python benchmarks/openai_vs_predict.py MODEL --batch 32 --route /v1/embeddings-float \
        --requests 10

ONNX Runtime's share of a count differs from process to process now and then (by ~0.2 G
instructions at batch 32): take the smallest of two runs.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
from typing import Any

SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank today"


def event(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
            "headers": {"content-type": "application/json"},
            "requestContext": {"http": {"method": "POST", "path": path}, "stage": "$default",
                               "requestId": "bench", "timeEpoch": 1},
            "body": json.dumps(body), "isBase64Encoded": False}


def requests(model: str, batch: int) -> dict[str, dict[str, Any]]:
    sentences = [f"{SENTENCE} {i}" for i in range(batch)]
    return {
        "/predict float": event("/predict", {"inputs": sentences}),
        "/predict base64": event("/predict", {"inputs": sentences, "parameters": {
            "encoding_format": "base64"}}),
        "/v1/embeddings float": event("/v1/embeddings", {
            "input": sentences, "model": model, "encoding_format": "float"}),
        "/v1/embeddings base64": event("/v1/embeddings", {
            "input": sentences, "model": model, "encoding_format": "base64"}),
        "/embed (TEI)": event("/embed", {"inputs": sentences, "truncate": True}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--batch", type=int, choices=(1, 32), help="this batch only")
    parser.add_argument("--route", help="run only this route (a name as printed, spaces as -)"
                        " --requests times, after one warm run of every route: for callgrind")
    parser.add_argument("--requests", type=int, default=0)
    args = parser.parse_args()

    from handler.bootstrap import create
    from handler.settings import Settings
    from onnx_lambda.lambda_context import LambdaContext

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": args.model,
                                        "ONNX_LAMBDA_METRICS": "0", "ONNX_LAMBDA_THREADS": "1"}))
    service.telemetry.stream = io.StringIO()
    model = service.model.name
    if args.route:
        routes = requests(model, args.batch or 1)
        for request in routes.values():
            for _ in range(2):
                assert service(request, LambdaContext())["statusCode"] == 200
        for _ in range(args.requests):
            service(routes[args.route.replace("-", " ")], LambdaContext())
        return
    print(f"model {model}; {args.runs} runs per route, interleaved; median (p10) ms, bytes")
    for batch in (args.batch,) if args.batch else (1, 32):
        routes = requests(model, batch)
        times: dict[str, list[float]] = {name: [] for name in routes}
        sizes: dict[str, int] = {}
        for run in range(args.runs + 20):
            for name, request in routes.items():
                started = time.perf_counter()
                answer = service(request, LambdaContext())
                took = (time.perf_counter() - started) * 1000.0
                assert answer["statusCode"] == 200, answer["body"][:300]
                if run >= 20:  # warm-up runs discarded
                    times[name].append(took)
                sizes[name] = len(answer["body"])
        base = {kind: statistics.median(times[f"/predict {kind}"]) for kind in ("float",
                                                                               "base64")}
        print(f"\nbatch {batch}")
        for name, samples in times.items():
            median = statistics.median(samples)
            p10 = statistics.quantiles(samples, n=10)[0]
            kind = "base64" if "base64" in name else "float"
            print(f"  {name:24s} {median:7.3f} ({p10:6.3f}) ms  x{median / base[kind]:.3f}"
                  f"  {sizes[name]:8d} B  x{sizes[name] / sizes[f'/predict {kind}']:.3f}")


if __name__ == "__main__":
    main()
