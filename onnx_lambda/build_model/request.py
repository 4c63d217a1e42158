"""A copy-paste ``curl`` for a model folder's example (what ``scripts/run`` prints).

A text model (``Manifest.takes_text``) gets its example sentences, else two of ours, as simple
JSON to ``/predict``; a reranker its example query and passages (else ours) to TEI's
``/rerank``. An inline example is posted the same way; an ``example_file`` is written to a
request file under the temporary folder and posted as ``.npy`` (one input) or as an Open
Inference Protocol V2 binary request (several inputs) to ``/v2/models/NAME/infer``.

Usage: ``python -m onnx_lambda.build_model.request MODEL_FOLDER URL``
"""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

from handler.manifest import Manifest
from onnx_lambda.client.wire import HEADER_LENGTH, npy_bytes, v2_request

SENTENCES = ["A quick test of the endpoint.", "Serverless inference, measured."]
PAIRS = {"query": "What does the endpoint measure?", "texts": SENTENCES}


def curl(folder: Path, url: str) -> str:
    manifest = Manifest.load(folder)
    text = manifest.takes_text()
    if manifest.pipeline == "rerank":
        example = manifest.example
        if not (isinstance(example, dict) and set(example) == set(PAIRS)):
            example = PAIRS  # the build's example was token ids (example_file)
        body = json.dumps(example, separators=(",", ":"))
        return f"curl -si {url}/rerank -H 'content-type: application/json' -d {shlex.quote(body)}"
    if text or manifest.example_file is None:
        example = manifest.example
        if text and not _sentences(example):  # the build's example was token ids
            example = SENTENCES
        body = json.dumps({"inputs": example}, separators=(",", ":"))
        return f"curl -si {url}/predict -H 'content-type: application/json' -d {shlex.quote(body)}"
    with np.load(folder / manifest.example_file, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    target = Path(tempfile.gettempdir()) / f"onnx-lambda-example-{manifest.name}"
    if len(arrays) == 1:
        target.with_suffix(".npy").write_bytes(npy_bytes(next(iter(arrays.values()))))
        return (f"curl -si {url}/predict -H 'content-type: application/x-npy' "
                f"--data-binary @{target.with_suffix('.npy')}")
    # binary tensors in, a JSON answer out (readable in the terminal)
    body, headers = v2_request(arrays, binary=True, binary_outputs=False)
    target.with_suffix(".bin").write_bytes(body)
    return (f"curl -si {url}/v2/models/{manifest.name}/infer "
            f"-H 'content-type: {headers['content-type']}' "
            f"-H '{HEADER_LENGTH}: {headers[HEADER_LENGTH]}' "
            f"--data-binary @{target.with_suffix('.bin')}")


def _sentences(example: object) -> bool:
    return isinstance(example, str) or (isinstance(example, list) and bool(example) and all(
        isinstance(item, str) for item in example))


if __name__ == "__main__":
    print(curl(Path(sys.argv[1]), sys.argv[2]))
