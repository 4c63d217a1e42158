"""A model folder of symbolic links, as a Hugging Face cache snapshot is (every file a link into
its blobs): onnx refuses external data behind a link, so the build reads a copy made in its
scratch folder, and the artifact answers as the source does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from handler.manifest import Manifest
from onnx_lambda.cli import main


def test_a_folder_of_links_with_external_data_builds(tmp_path: Path,
                                                      make_service: Callable[..., Any]) -> None:
    weights = np.arange(64 * 8, dtype=np.float32).reshape(64, 8) / 100.0
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(weights, "w")])
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshot"
    blobs.mkdir()
    snapshot.mkdir()
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(blobs / "model.onnx"), save_as_external_data=True,
              location="model.onnx.data", size_threshold=0)
    for name, blob in (("model.onnx", "a1"), ("model.onnx.data", "b2")):
        (blobs / name).rename(blobs / blob)
        (snapshot / name).symlink_to(blobs / blob)
    out = tmp_path / "built"
    assert main(["build-model", str(snapshot / "model.onnx"), "-o", str(out)]) == 0
    manifest = Manifest.load(out)
    assert not any(path.is_symlink() for path in out.iterdir())
    served = make_service(out)
    x = np.ones((1, 64), np.float32)
    got = served.model.run({"x": x})["y"]
    assert np.allclose(np.asarray(got.tolist()), x @ weights, rtol=1e-5)
    assert manifest.model in {p.name for p in out.iterdir()}
