"""``onnx-lambda bench --help`` without the lab's extra: the help (exit 0), then the line that
installs what running it needs."""

from __future__ import annotations

import pytest

from onnx_lambda import cli, extras


def test_bench_help_needs_no_extra(monkeypatch: pytest.MonkeyPatch,
                                   capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(extras.NEEDS, "bench", ("bench", ("no_such_module_for_onnx_lambda",)))
    assert cli.main(["bench", "--help"]) == 0
    out, err = capfd.readouterr()
    assert "usage: python -m benchmarks" in out
    assert err.strip().endswith(extras.install_line("bench"))
    assert "'bench' extra" in err
