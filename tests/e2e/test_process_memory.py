"""Memory of handler processes side by side (one Managed Instances environment): real
processes, real /proc accounting."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnx_lambda.plan import process_memory
from tests.support import models

pytestmark = pytest.mark.e2e


def test_side_by_side_processes_share_pages_so_pss_is_below_rss(tmp_path: Path) -> None:
    found = process_memory.measure(models.linear(tmp_path / "linear.onnx"), 2)
    assert found.processes == 2
    assert 0 < found.pss_mb < found.rss_mb  # the shared libraries are counted once in PSS
    assert found.per_process_mb == pytest.approx(found.pss_mb / 2)


def test_a_process_that_cannot_initialise_is_reported(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"failed: .*model not found"):
        process_memory.measure(tmp_path / "missing.onnx", 1)
