"""A copy-paste ``curl`` for a model folder's example (what ``scripts/run`` prints).

An inline example is posted as simple JSON to ``/predict``; an ``example_file`` is written to a
request file under the temporary folder and posted as ``.npy`` (one input) or as an Open
Inference Protocol V2 binary request (several inputs) to ``/v2/models/NAME/infer``.

Usage: ``python -m onnx_lambda.build_model.request MODEL_FOLDER URL``
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from handler.manifest import Manifest
from handler.model import DATATYPES

_DATATYPE_OF = {dtype: name for name, dtype in DATATYPES.items() if name != "BYTES"}


def curl(folder: Path, url: str) -> str:
    manifest = Manifest.load(folder)
    if manifest.example_file is None:
        body = json.dumps({"inputs": manifest.example}, separators=(",", ":"))
        return f"curl -si {url}/predict -H 'content-type: application/json' -d '{body}'"
    with np.load(folder / manifest.example_file, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    target = Path(tempfile.gettempdir()) / f"onnx-lambda-example-{manifest.name}"
    if len(arrays) == 1:
        buffer = io.BytesIO()
        np.save(buffer, next(iter(arrays.values())), allow_pickle=False)
        target.with_suffix(".npy").write_bytes(buffer.getvalue())
        return (f"curl -si {url}/predict -H 'content-type: application/x-npy' "
                f"--data-binary @{target.with_suffix('.npy')}")
    header, chunks = [], []
    for name, array in arrays.items():
        if array.dtype.kind in "US":  # strings: 4-byte little-endian length, then the bytes
            data = b"".join(len(v).to_bytes(4, "little") + v
                            for v in (str(s).encode() for s in array.ravel()))
            datatype = "BYTES"
        else:
            data, datatype = np.ascontiguousarray(array).tobytes(), _DATATYPE_OF[array.dtype.name]
        header.append({"name": name, "shape": list(array.shape), "datatype": datatype,
                       "parameters": {"binary_data_size": len(data)}})
        chunks.append(data)
    head = json.dumps({"inputs": header}).encode()
    target.with_suffix(".bin").write_bytes(head + b"".join(chunks))
    return (f"curl -si {url}/v2/models/{manifest.name}/infer "
            f"-H 'content-type: application/octet-stream' "
            f"-H 'inference-header-content-length: {len(head)}' "
            f"--data-binary @{target.with_suffix('.bin')}")


if __name__ == "__main__":
    print(curl(Path(sys.argv[1]), sys.argv[2]))
