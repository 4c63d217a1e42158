"""Smoke run of ``python -m benchmarks.generation_genai`` on the tiny test decoder exported by
onnxruntime-genai's builder: both runtimes answer on genai's graph with the same greedy tokens,
the prefix-cache row reuses the system prompt, the prompt-lookup row keeps the greedy tokens.
No timing is asserted."""

from __future__ import annotations

import re

import pytest

from benchmarks import decoder_quant, generation_genai
from onnx_lambda.build_model import quant_methods


def test_generation_genai_reports_every_row(tmp_path_factory: pytest.TempPathFactory,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    workdir = tmp_path_factory.getbasetemp() / "generation-genai-bench"
    assert generation_genai.main(["--model", "tiny", "--workdir", str(workdir), "--threads",
                                  "1", "--prompt-tokens", "5,12", "--new-tokens", "6",
                                  "--rounds", "1", "--cold-repeat", "1"]) == 0
    out = capsys.readouterr().out
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if re.match(r"\| tiny \|", line)]
    throughput = [r for r in rows if len(r) == 9]
    assert {(r[1], r[3]) for r in throughput} == {
        ("1", generation_genai.GENAI), ("1", generation_genai.OURS)}
    assert len(throughput) == 4 and all(r[8] == "same tokens" for r in throughput)
    (prefix,) = [r for r in rows if len(r) == 6]
    assert int(prefix[5]) > 10  # the second request reused the system prompt
    (lookup,) = [r for r in rows if len(r) == 7]
    assert lookup[6] == "same tokens"
    cold = [line for line in out.splitlines() if line.startswith("| tiny (")]
    assert {line.split("|")[2].strip() for line in cold} == {
        "ours", "onnxruntime-genai", "C-API floor"}


def test_decoder_quant_reports_every_decoder_method(tmp_path_factory: pytest.TempPathFactory,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.decoder_quant`` on the tiny decoder's genai export: a row for fp32
    and for every decoder method, each timed in a process of its own. No timing is asserted."""
    workdir = tmp_path_factory.getbasetemp() / "generation-genai-bench"  # (shared with the above)
    folders = generation_genai.prepare("tiny", workdir)
    assert decoder_quant.main([str(folders["genai"]), "--tokens", "4", "--rounds", "1"]) == 0
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    want = {"fp32"} | {r.label for r in quant_methods.RECORDS if r.decoder and not (
        r.needs and quant_methods.missing_package(r.method, r.algo))}
    assert {row[0] for row in rows} == want
    assert all(0.0 <= float(row[1]) <= 1.0 and row[4].endswith("×") for row in rows)

