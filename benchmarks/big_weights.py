"""Big weights without a second copy: peak resident memory at load (and through a short
generation) against the weights' own bytes, for the ways ONNX Runtime can hold them.

    python -m benchmarks.big_weights MODEL_FOLDER [--repeat 3]

``MODEL_FOLDER``: a ``build-model`` artifact of a decoder; beside its one model file the
variants are made (``model.inline.onnx`` with the weights inside, where they fit protobuf's 2
GiB; ``model.opt.onnx`` + ``model.opt.onnx.data``, an ORT-format ``model.ort``). Each variant
runs in a fresh interpreter (the handler's C-API session, one thread): load, then a prefill of 8
tokens and 8 greedy steps. Reported per variant: the median load time, peak RSS (``VmHWM``)
after the load and after the steps, the peak over the weights' bytes once the runtime's own
floor (the same interpreter with the library loaded and an env made, no session) is taken off,
and the median step time (prepacking trades memory for speed).

Variants: the portable ``.onnx`` (weights parsed out of the protobuf: a copy), external data
(``model.opt.onnx.data``: read into ORT's buffers), ORT format mapped from the file with its
initializers used in place (``session.use_memory_mapped_ort_model`` +
``session.use_ort_model_bytes_for_initializers``), each of the last two with and without
``session.disable_prepacking`` (prepacking re-lays MatMul weights into the kernels' own buffers:
a second copy unless the original is freed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.cold import interpreter
from onnx_lambda.source_tree import root

MAPPED = {"session.use_memory_mapped_ort_model": "1",
          "session.use_ort_model_bytes_for_initializers": "1"}
NO_PREPACK = {"session.disable_prepacking": "1"}
INLINE_LIMIT = 2**31 - 2**26  # protobuf's 2 GiB, with room for the graph
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "onnx, weights inside": ("model.inline.onnx", {}),
    "onnx + external data": ("model.opt.onnx", {}),
    "onnx + external data, no prepacking": ("model.opt.onnx", NO_PREPACK),
    "ort format, mapped": ("model.ort", MAPPED),
    "ort format, mapped, no prepacking": ("model.ort", {**MAPPED, **NO_PREPACK}),
}
PROBE = r"""
import json, sys, time
from benchmarks.rss import peak_rss_mb
from handler.ort import capi
capi.api()
path, config = sys.argv[1], json.loads(sys.argv[2])
if not path:
    print(json.dumps({"floor_mb": peak_rss_mb()})); sys.exit()
from handler.generation.decoder import Decoder
from handler.generation.layout import recognise
from handler.generation.cache import KVCache
from handler.ort.session import Session
started = time.perf_counter()
session = Session(path, intra_op_threads=1, optimization="disable", config=config)
load_ms = (time.perf_counter() - started) * 1000.0
loaded_mb = peak_rss_mb()
layout = recognise(session.inputs, session.outputs)
decoder = Decoder(session, layout, 64, frozenset())
cache = KVCache(decoder.runner, layout, 64)
logits, steps = cache.forward(list(range(3, 11))), []
for _ in range(8):
    token = decoder.argmax.choose(logits) if decoder.argmax else 3
    t = time.perf_counter(); logits = cache.forward([token])
    steps.append((time.perf_counter() - t) * 1000.0)
cache.close()
print(json.dumps({"load_ms": load_ms, "loaded_mb": loaded_mb, "peak_mb": peak_rss_mb(),
                  "step_ms": sorted(steps)[len(steps) // 2]}))
"""


def probe(path: str, config: dict[str, str]) -> dict[str, float]:
    prefix, env_path = interpreter()
    env = {**os.environ, **env_path}
    out = subprocess.run([*prefix, "-c", PROBE, path, json.dumps(config)], env=env,
                         cwd=root(), check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out.splitlines()[-1])
    return result


def weights_bytes(folder: Path) -> int:
    """The initializers' bytes: the external data file the optimized model keeps them in."""
    data = folder / "model.opt.onnx.data"
    return data.stat().st_size if data.exists() else (folder / "model.onnx").stat().st_size


def ensure_variants(folder: Path) -> None:
    """The three files the variants load, made beside the artifact's one model file (a decoder
    artifact ships one copy of the weights: ``build_model.llm_package``)."""
    import onnx

    from handler.manifest import Manifest
    from onnx_lambda.build_model.optimize import optimize_offline

    source = folder / Manifest.load(folder).model
    if not (folder / "model.opt.onnx").exists():
        optimize_offline(source, folder / "model.opt.onnx", "extended")
    if not (folder / "model.ort").exists():
        optimize_offline(source, folder / "model.ort", "extended")
    model = onnx.load(str(source))  # the weights inside the protobuf, where they fit
    if not (folder / "model.inline.onnx").exists() and model.ByteSize() < INLINE_LIMIT:
        onnx.save(model, str(folder / "model.inline.onnx"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.big_weights",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    ensure_variants(args.folder)
    weights_mb = weights_bytes(args.folder) / 2**20
    floor = statistics.median(probe("", {})["floor_mb"] for _ in range(args.repeat))
    print(f"{args.folder}: weights {weights_mb:.0f} MB; runtime floor (interpreter + "
          f"libonnxruntime + env) {floor:.0f} MB; medians of {args.repeat} fresh processes")
    print(f"{'variant':38s} {'load ms':>8s} {'RSS load':>9s} {'RSS peak':>9s} "
          f"{'(peak-floor)/weights':>21s} {'step ms':>8s}")
    for name, (file, config) in VARIANTS.items():
        if not (args.folder / file).exists():
            print(f"{name:38s} (not made: the weights exceed protobuf's 2 GiB)")
            continue
        runs = [probe(str(args.folder / file), config) for _ in range(args.repeat)]
        load, loaded, peak, step = (statistics.median(r[k] for r in runs)
                                    for k in ("load_ms", "loaded_mb", "peak_mb", "step_ms"))
        print(f"{name:38s} {load:8.0f} {loaded:9.0f} {peak:9.0f} "
              f"{(peak - floor) / weights_mb:21.2f} {step:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
