"""Importing ``handler.app`` with a model configured (the whole init, warm-up included) in a fresh
interpreter loads nothing heavy: neither numpy nor onnxruntime's Python binding (read from
``/proc/self/maps``, not just ``sys.modules``: a C extension loaded behind Python's back would
show there), nor the AWS SDK, Powertools, the X-Ray SDK, or tokenizers for a model without
text, nor the standard-library modules the handler keeps off its cold path for their measured
cost. Our own modules' import time stays under a generous ceiling."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from benchmarks.cold import interpreter
from onnx_lambda.cli import main
from onnx_lambda.source_tree import root
from tests.support import build_models, decoders, models

# Heavy packages: each costs tens to hundreds of milliseconds of a cold start.
HEAVY = ["numpy", "onnxruntime", "boto3", "botocore", "aws_lambda_powertools", "aws_xray_sdk",
         "tokenizers", "torch", "pandas", "scipy", "sklearn", "transformers"]
# The standard library's heavy share, imported only where needed: typing (type names under
# TYPE_CHECKING, records from handler.records: ~16 M instructions, 8 % of the cold init),
# pathlib (paths are str and os.path: ~15 M), dataclasses with inspect (~14 ms).
STDLIB_HEAVY = ["typing", "pathlib", "dataclasses", "inspect"]
# Sum of the handler.* self times under -X importtime, handler.app's own excluded (its module
# scope is the init: settings, model load, warm-up). Measured with this test's own method (the
# least of 5 runs, bytecode cached as the image's compileall does) on 2 loaded cores, load
# average 6: 21.7-55.0 ms over 10 trials, median 28 ms. The ceiling is ~5x that median: it
# catches module-level work that grows by an order of magnitude, not noise.
IMPORT_CEILING_MS = 150
ROOT = root()
PROBE = ("import json, sys; import handler.app; "
         "maps = open('/proc/self/maps').read(); "
         "print(json.dumps([sorted(sys.modules), "
         "'libonnxruntime.so' in maps, 'onnxruntime_pybind11_state' in maps, "
         "'numpy' in maps]))")
BUILDERS = {
    "linear": models.linear, "multi_io": models.multi_io, "gather": models.gather,
    "scalar_io": models.scalar_io, "strings": models.strings, "zipmap": models.zipmap,
    "identity-float16-rank5": lambda p: models.identity(p, "float16", 5),
    "identity-bool-rank0": lambda p: models.identity(p, "bool", 0),
    "identity-uint64-rank3": lambda p: models.identity(p, "uint64", 3),
}


def probe(model: Path, **variables: str) -> tuple[set[str], bool, bool, bool]:
    """A fresh interpreter started as Lambda starts one (``bench.cold.interpreter``: without
    this venv's start-up hooks, whose editable-install finder imports pathlib and re first)."""
    prefix, path = interpreter()
    env = {k: v for k, v in os.environ.items() if k != "ONNX_LAMBDA_TRACING"}
    env.update(ONNX_LAMBDA_MODEL=str(model), **path, **variables)
    out = subprocess.run([*prefix, "-c", PROBE], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    loaded, library, binding, numpy = json.loads(out.splitlines()[-1])
    return {m.split(".")[0] for m in loaded} | set(loaded), library, binding, numpy


def our_import_ms(model: Path, pycache: Path) -> tuple[float, int]:
    """(Sum of our modules' self import times in ms, how many modules) for one fresh import."""
    prefix, path = interpreter()
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONNX_LAMBDA_TRACING", "PYTHONDONTWRITEBYTECODE")}
    env.update(ONNX_LAMBDA_MODEL=str(model), PYTHONPYCACHEPREFIX=str(pycache), **path)
    err = subprocess.run([*prefix, "-X", "importtime", "-c", "import handler.app"],
                         env=env, cwd=ROOT, check=True, capture_output=True, text=True).stderr
    ours = [int(found[1]) for found in re.finditer(
        r"^import time:\s+(\d+) \|\s+\d+ \|\s*(handler(?:\.\S+)?)$", err, re.M)
        if found[2] != "handler.app"]
    return sum(ours) / 1000.0, len(ours)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_init_loads_neither_numpy_nor_the_binding(tmp_path: Path, name: str) -> None:
    loaded, library, binding, numpy = probe(BUILDERS[name](tmp_path / f"{name}.onnx"))
    assert "handler" in loaded and library  # the probe really ran the init on the C library
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert loaded.isdisjoint(STDLIB_HEAVY), sorted(loaded & set(STDLIB_HEAVY))
    assert not binding and not numpy


@pytest.mark.serial  # a time: alone on the machine
def test_our_modules_import_under_the_ceiling(tmp_path: Path) -> None:
    model = models.linear(tmp_path / "linear.onnx")
    our_import_ms(model, tmp_path / "pycache")  # compiles and caches the bytecode
    runs = [our_import_ms(model, tmp_path / "pycache") for _ in range(5)]
    assert all(count >= 20 for _, count in runs), runs  # the parse found our modules
    assert min(ms for ms, _ in runs) < IMPORT_CEILING_MS, runs


def test_built_artifacts_classifier_and_text_embedding(tmp_path: Path, digits_dir: Path) -> None:
    """``build-model`` artifacts (the graph's own softmax/top-k and pooling): digits with the
    classifier pipeline, a text-embedding model with its tokenizer (tokenizers' extension is
    that pipeline's one extra import: not the package's ``__init__``, which imports
    ``typing``)."""
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx")
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    assert main(["build-model", str(source), "-o", str(tmp_path / "text"), "--pipeline",
                 "text-embedding", "--file", str(tokenizer)]) == 0
    for folder, extra in ((digits_dir, set()), (tmp_path / "text", {"tokenizers"})):
        loaded, library, binding, numpy = probe(folder)
        assert "handler" in loaded and library
        assert loaded.isdisjoint(set(HEAVY) - extra), sorted(loaded & set(HEAVY))
        # (an example.npz's zipfile brings pathlib: text models ship one)
        heavy = {"typing"} if extra else set(STDLIB_HEAVY)
        assert loaded.isdisjoint(heavy), sorted(loaded & heavy)
        assert not binding and not numpy, folder


def test_tracing_off_keeps_the_x_ray_sdk_and_powertools_off_the_cold_path(
        tmp_path: Path) -> None:
    model = models.linear(tmp_path / "linear.onnx")
    off, *_ = probe(model, ONNX_LAMBDA_TRACING="off")
    assert off.isdisjoint({"aws_xray_sdk", "aws_lambda_powertools", "botocore"})
    # the probe can tell: with tracing on, the SDK (and its botocore) are loaded at init
    on, *_ = probe(model, ONNX_LAMBDA_TRACING="on")
    assert {"aws_xray_sdk", "botocore"} <= on
    assert "aws_lambda_powertools" not in on


def test_a_generative_model_loads_its_tokenizer_and_jinja2_but_no_numpy(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """A built decoder (the generate pipeline, warm-up included): tokenizers' extension and
    jinja2 for its chat template are its extra imports; numpy and the binding stay out. (The
    run's shared build: ``build-model`` with defaults, as the other generate tests serve it.)"""
    loaded, library, binding, numpy = probe(decoders.built(tmp_path_factory, "llama"))
    assert "handler.pipelines.generate" in loaded and "jinja2" in loaded and library
    assert loaded.isdisjoint(set(HEAVY) - {"tokenizers"}), sorted(loaded & set(HEAVY))
    assert not binding and not numpy
