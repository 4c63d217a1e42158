"""The curl ``scripts/run`` prints (``onnx_lambda.build_model.request``) is a request the handler
answers with 200, for an inline example and for ``example_file`` ones (.npy, V2 binary)."""

from __future__ import annotations

import itertools
import json
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.build_model.request import PAIRS, curl
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support import example_models


def replay(command: str, service: Any) -> tuple[int, dict[str, Any]]:
    """Run the printed curl against the service: its URL path, headers and body."""
    words = shlex.split(command)
    path = words[2].removeprefix("http://host")
    headers, body = {}, b""
    for flag, value in itertools.pairwise(words[3:]):
        if flag == "-H":
            key, _, val = value.partition(": ")
            headers[key] = val
        elif flag == "-d":
            body = value.encode()
        elif flag == "--data-binary":
            body = Path(value.removeprefix("@")).read_bytes()
    result = service(http_event(path=path, body=body, headers=headers), Context())
    return result["statusCode"], json.loads(result["body"]) if not result.get(
        "isBase64Encoded") else {}


@pytest.mark.parametrize(("model", "args", "route"), [
    (lambda p: example_models.rows_of(p), [], "/predict"),  # inline JSON
    (lambda p: example_models.long_conv(p, kernel=2048), [], "/predict"),  # .npy file
    (lambda p: example_models.rate_gated(p), ["--shape", "x=1x2048"], "/v2/models/m/infer"),
])
def test_the_printed_curl_is_answered(tmp_path: Path, model: Callable[[Path], Path],
                                      args: list[str], route: str,
                                      make_service: Callable[..., Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the request file goes
    out = tmp_path / "m"
    assert main(["build-model", str(model(tmp_path / "source.onnx")), "-o", str(out),
                 *args]) == 0
    command = curl(out, "http://host")
    assert command.startswith(f"curl -si http://host{route} ")
    assert "@" not in command or f"@{tmp_path}" in command
    status, body = replay(command, make_service(out))
    assert status == 200, body


@pytest.mark.parametrize("pipeline", ["classifier", "text-embedding"])
def test_a_text_model_gets_sentences(tmp_path: Path, pipeline: str,
                                     make_service: Callable[..., Any]) -> None:
    """A text classifier or a text-embedding model: the curl posts sentences, not token ids."""
    from tests.support import build_models

    if pipeline == "classifier":
        source, _, _ = build_models.text_classifier(tmp_path / "source.onnx")
    else:
        source, _ = build_models.token_embeddings(tmp_path / "source.onnx")
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    out = tmp_path / "m"
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", pipeline,
                 "--file", str(tokenizer)]) == 0
    command = curl(out, "http://host")
    assert command.startswith("curl -si http://host/predict ")
    assert '"inputs":["' in command  # sentences
    status, body = replay(command, make_service(out))
    assert status == 200, body
    assert len(body["predictions" if pipeline == "classifier" else "embeddings"]) == 2


@pytest.mark.parametrize("example", [None, {"query": "the cat's mat", "texts": ["it's a dog"]}])
def test_a_reranker_gets_a_query_and_passages_on_rerank(
        tmp_path: Path, example: dict[str, Any] | None,
        make_service: Callable[..., Any]) -> None:
    """The build's example (found token ids: ours instead; or a quoted one, shell-quoted)."""
    from handler.manifest import Manifest
    from tests.support import build_models

    source, _ = build_models.cross_encoder(tmp_path / "source.onnx")
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    out = tmp_path / "m"
    assert main(["build-model", str(source), "-o", str(out), "--file", str(tokenizer)]) == 0
    if example is not None:
        Manifest.load(out)._replace(example=example).dump(out)
    command = curl(out, "http://host")
    assert command.startswith("curl -si http://host/rerank ")
    status, body = replay(command, make_service(out))
    assert status == 200, body
    sent = example or PAIRS
    assert sorted(rank["index"] for rank in body) == list(range(len(sent["texts"])))
