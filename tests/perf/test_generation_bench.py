"""Smoke runs of the generation benchmarks on the tiny test decoder: every target of
``python -m benchmarks.generation`` answers, the report has its rows, ratios and verdicts,
greedy tokens agree across runtimes, the cold-init table has a row per target;
``benchmarks.big_weights`` reports every loading variant. No timing is asserted."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from benchmarks import big_weights, generation
from benchmarks.generation_targets import Run, completions_route, server_timing, timed

TARGETS = ("ours fp32", "ours int4", "onnxruntime-genai fp32", "onnxruntime-genai int4",
           "PyTorch fp32", "ours fp32, graph optimization all",
           "ours int4, graph optimization all", "ours fp32 /v1/completions",
           "ours int4 /v1/completions")
NO_SPIN = ("onnxruntime-genai fp32, spinning off", "onnxruntime-genai int4, spinning off")


def test_decode_pace_counts_the_tokens_after_the_first() -> None:
    run = Run(ttft_ms=100.0, total_ms=1100.0, tokens=tuple(range(11)), cpu_ms=900.0)
    assert run.tokens_per_s == pytest.approx(10.0)
    assert math.isnan(Run(5.0, 5.0, (1,), 1.0).tokens_per_s)


def test_server_timing_reads_one_metric() -> None:
    header = "init;dur=1.5, ttft;dur=12.25;desc=\"first token\", total;dur=40"
    assert server_timing(header, "ttft") == 12.25
    with pytest.raises(RuntimeError, match="no ttft"):
        server_timing("total;dur=40", "ttft")


class _Route:
    """A handler whose /v1/completions answers as issue 27's route does (usage, ttft)."""

    class model:
        name = "decoder"

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any], context: object) -> dict[str, Any]:
        self.bodies.append(json.loads(event["body"]))
        return {"statusCode": 200, "headers": {"server-timing": "ttft;dur=2.5, total;dur=9"},
                "body": json.dumps({"usage": {"completion_tokens": 6}})}


def test_the_route_row_reads_the_answer_s_ttft_and_usage() -> None:
    route = _Route()
    run = timed(completions_route(route, lambda ids: "text of " + ",".join(map(str, ids))),
                [1, 7, 9], 6)
    assert route.bodies == [{"model": "decoder", "prompt": "text of 1,7,9", "max_tokens": 6,
                             "temperature": 0}]
    assert len(run.tokens) == 6
    assert run.ttft_ms >= 2.5  # the answer's own moment, not when the answer came back


def test_the_report_on_the_tiny_decoder(tmp_path_factory: pytest.TempPathFactory,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    workdir = tmp_path_factory.getbasetemp() / "generation-bench"
    assert generation.main(["--size", "tiny", "--workdir", str(workdir), "--threads", "1,2",
                            "--prompt-tokens", "5,12", "--new-tokens", "4", "--rounds", "1",
                            "--cold-repeat", "1", "--ours-level", "all"]) == 0
    out = capsys.readouterr().out
    # both runtimes on the same file, and PyTorch on the same weights, choose the same tokens
    agreement = [line for line in out.splitlines() if line.startswith("greedy tokens")]
    assert len(agreement) == 4  # two prompts at 1 and 2 threads
    for line in agreement:
        assert "fp32: ours 4 tokens, genai 4, the same tokens as genai's" in line
        assert "ours the same tokens as PyTorch's" in line
    rows = {(cells[0], cells[1], cells[2]): cells[3:] for cells in (
        [c.strip() for c in line.strip("|").split("|")]
        for line in out.splitlines() if re.match(r"\| [12] \| \d+ \|", line))}
    lengths = {length for _, length, _ in rows}
    assert len(lengths) == 2
    assert set(rows) == {("1", length, name) for length in lengths for name in TARGETS} | {
        ("2", length, name) for length in lengths for name in TARGETS + NO_SPIN}
    for (_, _, name), cells in rows.items():
        ttft, tps, cpu = (float(c) for c in cells[:3])
        assert ttft > 0 and tps > 0 and cpu > 0
        ratios = [float(c.rstrip("×")) for c in cells[3:] if c]
        assert len(ratios) == (1 if name == "PyTorch fp32" else 3)
        assert all(math.isfinite(r) and r > 0 for r in ratios)
        if name.startswith("onnxruntime-genai") and not name.endswith("spinning off"):
            assert cells[3:5] == ["1.00×", "1.00×"]
    verdicts = [line for line in out.splitlines() if line.startswith("ours ")]
    # fp32 and int4, as built and at level all, two prompt lengths, two thread counts
    assert len(verdicts) == 16
    assert all("× genai (≥ 0.95: " in line for line in verdicts)
    assert sum("PyTorch fp32 (≥ 3: " in line for line in verdicts) == 8
    assert sum("against genai, spinning off: tokens/s " in line for line in verdicts) == 8
    cold = re.findall(r"^\| (fp32|int4) \(\d+ MB of weights\) \| ([^|]+) \| (\d+) \|", out,
                      re.MULTILINE)
    assert {(precision, target.strip()) for precision, target, _ in cold} == {
        (p, t) for p in ("fp32", "int4") for t in (
            "ours", "ours, graph optimization all", "onnxruntime-genai", "C-API floor")}
    assert re.search(r"^fp32: peak RSS \d+ MB vs 1\.15 × \d+ \+ \d+ = \d+ MB: (met|MISSED)$",
                     out, re.MULTILINE)
    # the model is built once: a second run finds it
    assert (workdir / "llama-tiny-s0" / "int4" / "model.json").exists()


def test_big_weights_reports_every_variant(tmp_path_factory: pytest.TempPathFactory,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    built = generation.build(tmp_path_factory.getbasetemp() / "generation-bench", "tiny")
    assert big_weights.main([str(built["fp32"]), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    found = {}
    for line in out.splitlines():
        for name in big_weights.VARIANTS:
            if line.startswith(name + " "):
                found[name] = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?",
                                                            line[len(name):])]
    assert set(found) == set(big_weights.VARIANTS), out
    assert all(len(v) == 5 and all(math.isfinite(x) and x >= 0 for x in v)
               for v in found.values()), out
