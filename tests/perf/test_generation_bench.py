"""Smoke runs of the generation benchmarks on the tiny test decoder: every target of
``benchmarks.generation`` (ours, onnxruntime-genai, fp32 and int4) answers the same greedy
tokens with finite, positive figures; ``benchmarks.big_weights`` reports every loading variant."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

from benchmarks import big_weights, generation
from tests.support import decoders


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bench")
    shutil.copytree(decoders.folder(tmp_path_factory, "llama"), folder / "llama-tiny")
    return folder


def rows(text: str, names: list[str]) -> dict[str, list[float]]:
    """Each named row's numbers (its name's own digits left out)."""
    found = {}
    for line in text.splitlines():
        for name in names:
            if line.startswith(name + " "):
                found[name] = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?",
                                                            line[len(name):])]
    return found


def test_generation_targets_agree_and_measure(workdir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert generation.main(["--size", "tiny", "--rounds", "1", "--tokens", "8", "--int4",
                            "--no-pytorch", "--workdir", str(workdir)]) == 0
    out = capsys.readouterr().out
    names = ["ours fp32", "onnxruntime-genai fp32", "ours int4", "onnxruntime-genai int4"]
    figures = rows(out, names)
    assert set(figures) == set(names), out
    assert all(len(v) == 8 and all(math.isfinite(x) and x > 0 for x in v)
               for v in figures.values()), out
    assert out.count("True") == 4, out  # genai's greedy tokens equal ours, fp32 and int4


def test_big_weights_reports_every_variant(workdir: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    built = generation.built(workdir / "llama-tiny", "fp32")
    assert big_weights.main([str(built), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    figures = rows(out, list(big_weights.VARIANTS))
    assert set(figures) == set(big_weights.VARIANTS), out
    assert all(len(v) == 5 and all(math.isfinite(x) and x >= 0 for x in v)
               for v in figures.values()), out
