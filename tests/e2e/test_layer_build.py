"""The layer recipe, for real: manylinux wheels from the index, pruned, then imported in an
isolated interpreter that runs an inference. Built for this interpreter's Python version (the
deployed layer targets 3.12 and cannot be imported here); same pins, flags and pruning."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import models
from tests.support.layer import build_layer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUN = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy, onnxruntime
assert numpy.__file__.startswith(sys.argv[1]), numpy.__file__
session = onnxruntime.InferenceSession(sys.argv[2], providers=["CPUExecutionProvider"])
(y,) = session.run(None, {"x": numpy.ones((1, 4), numpy.float32)})
print(y.tolist())
"""


def test_pruned_layer_imports_and_runs_in_isolation(tmp_path: Path) -> None:
    site = tmp_path / "python"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    arch = "arm64" if platform.machine() == "aarch64" else "x86_64"
    subprocess.run(build_layer.pip_command(site, arch, version), check=True, timeout=600)
    freed = build_layer.prune(site)
    assert freed > 0
    assert not (site / "onnxruntime" / "tools").exists()
    build_layer.check_layer_size(build_layer.tree_size(tmp_path))

    model = models.linear(tmp_path / "linear.onnx")
    result = subprocess.run([sys.executable, "-I", "-c", RUN, str(site), str(model)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    expected = models.WEIGHTS.sum(axis=0).tolist()
    assert result.stdout.strip() == str([expected])
