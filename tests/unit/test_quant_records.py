"""One declared record per quantization method (``quant_methods.RECORDS``) drives the CLI's
choices and help, ``auto``'s tries and the decoder build; and the gate's samples split into a
tuning half and a judging half that share no sample."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from handler.manifest import RUNS_ALONE
from onnx_lambda.build_model import decoder_build, gate, quant_auto, quant_methods
from onnx_lambda.build_model.quantize import QuantizeSettings
from onnx_lambda.cli import build_parser


def test_every_record_is_on_the_command_line_with_its_one_line() -> None:
    parser = build_parser()
    action = next(a for sub in parser._subparsers._group_actions  # type: ignore[union-attr]
                  for name, p in sub.choices.items() if name == "build-model"
                  for a in p._actions if a.dest == "quantize")
    assert set(action.choices) == {*(r.method for r in quant_methods.RECORDS), "auto", "none"}
    for record in quant_methods.RECORDS:
        assert f"{record.label}: {record.summary}" in action.help
    algos = next(a for sub in parser._subparsers._group_actions  # type: ignore[union-attr]
                 for name, p in sub.choices.items() if name == "build-model"
                 for a in p._actions if a.dest == "algo")
    assert list(algos.choices) == [r.algo for r in quant_methods.RECORDS if r.algo]


def test_auto_tries_a_batch_dependent_method_only_where_the_pipeline_runs_items_alone() -> None:
    """Dynamic INT8 shares one activation scale across the batch: not a default for a pipeline
    that runs a batch as one (the tensor and classifier pipelines), while ``--quantize
    int8-dynamic`` still names it; the text-embedding and rerank pipelines can run each item
    alone (``item_by_item``, which the build then declares), so auto may try it there."""
    for pipeline in ("tensor", "classifier"):
        for objective in ("latency", "size"):
            tried = quant_methods.tries(objective, pipeline)
            assert tried and all(r.batch_invariant for r in tried)
            assert "int8-dynamic" not in [r.label for r in tried]
    assert set(RUNS_ALONE) == {"text-embedding", "rerank"}
    for pipeline in RUNS_ALONE:
        assert "int8-dynamic" in [r.label for r in quant_methods.tries("latency", pipeline)]
    labels = [s.label for s in quant_auto.menu(QuantizeSettings(), "latency", "tensor")]
    assert labels == [r.label for r in quant_methods.tries("latency", "tensor")]
    assert quant_methods.record("int8-dynamic").batch_invariant is False


def test_the_decoder_build_takes_the_weight_only_records() -> None:
    decoders = [r for r in quant_methods.RECORDS if r.decoder]
    assert all(not r.calibrates for r in decoders)
    assert set(decoder_build.METHODS) == {*(r.method for r in decoders), "none"}
    assert decoder_build.DECODER_ALGO in decoder_build.DECODER_ALGOS
    assert [r.label for r in quant_methods.tries("latency", "generate")] == [
        r.label for r in sorted((r for r in decoders if r.latency is not None),
                                key=lambda r: r.latency or 0)]


def test_a_new_record_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a method declares is all the menu reads: a record added to RECORDS is tried in its
    place, serves what its flags say, and dispatches to its own writer."""
    written: list[str] = []
    new = quant_methods.Method("int8-new", None, "a test method", ("MatMul",),
                               lambda job: written.append(job.target.name), latency=0)
    monkeypatch.setattr(quant_methods, "RECORDS", (*quant_methods.RECORDS, new))
    monkeypatch.setitem(quant_methods.BY_LABEL, new.label, new)
    assert quant_methods.tries("latency", "tensor")[0] is new
    assert not replace(new, batch_invariant=False).serves("tensor")
    from pathlib import Path

    quant_methods.apply("int8-new", Path("a.onnx"), Path("b.onnx"), op_types=("MatMul",),
                        per_channel=True, reduce_range=True, algo="rtn", block_size=32,
                        symmetric=False, keep_fp32_ops=(), calibration=[], candidates=[])
    assert written == ["b.onnx"]


def _samples(count: int) -> list[gate.Feeds]:
    return [{"x": np.full((1, 3), float(i), np.float32)} for i in range(count)]


@pytest.mark.parametrize("count", [2, 7, 60])
def test_no_sample_that_tunes_is_in_the_judging_split(count: int) -> None:
    samples = _samples(count)
    parts = gate.split(samples)
    assert parts.held_out and parts.tune and parts.judge
    assert not {id(s) for s in parts.tune} & {id(s) for s in parts.judge}
    assert {id(s) for s in parts.tune} | {id(s) for s in parts.judge} == {id(s) for s in samples}
    assert "held-out" in parts.describe()


def test_a_single_sample_is_judged_on_itself_and_says_so() -> None:
    parts = gate.split(_samples(1), synthetic=True)
    assert not parts.held_out and parts.judge == parts.tune
    assert parts.describe() == "1 synthetic sample(s), the same that tuned: none held out"


def test_reference_rows_follow_their_samples() -> None:
    samples = [{"x": np.zeros((rows, 2), np.float32)} for rows in (1, 2, 1, 3)]
    reference = np.arange(7, dtype=np.float32)[:, None].repeat(2, axis=1)
    picked = gate.rows_of(samples, reference, (1, 3))
    assert picked[:, 0].tolist() == [1, 2, 4, 5, 6]
    assert gate.rows_of(samples, {"a": reference}, (0,))["a"][:, 0].tolist() == [0]


def test_a_mixed_batch_pads_token_inputs_and_stacks_the_rest() -> None:
    texts = [{"input_ids": np.ones((1, n), np.int64), "attention_mask": np.ones((1, n), np.int64)}
             for n in (3, 5)]
    batch = gate.mixed_batch(texts)
    assert batch is not None and batch["input_ids"].shape == (2, 5)
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1] * 5]
    assert gate.mixed_batch([{"x": np.ones((1, 2))}, {"x": np.ones((1, 3))}]) is None
