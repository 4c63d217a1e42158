"""``build-model`` on the tiny test decoders: the layout recognised and recorded, the artifact
served by the generate pipeline with the source's greedy tokens, int4 behind the token-agreement
gate, and layouts the pipeline cannot run refused with what was expected."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest

from handler.manifest import Manifest
from onnx_lambda.cli import main
from tests.functional.test_generate import kind_of, predict
from tests.support import models


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


def test_fp32_build_records_the_layout_and_serves_the_same_tokens(
        tmp_path: Path, decoder_dir: Path, make_service: Callable[..., Any]) -> None:
    out = tmp_path / "built"
    assert build(decoder_dir / "model.onnx", out) == 0
    manifest = Manifest.load(out)
    llama = kind_of(decoder_dir) == "llama"
    assert manifest.pipeline == "generate"
    assert manifest.pipeline_options == {"context_length": 256,
                                         "eos_token_ids": [2 if llama else 0]}
    decoder = manifest.metadata["decoder"]
    assert (decoder["layers"], decoder["kv_heads"], decoder["head_dim"]) == \
        (2, 2 if llama else 4, 16)
    assert (decoder["kv_dtype"], decoder["chat_template"]) == ("float32", True)
    assert decoder["bos_token"] == ("<s>" if llama else "<|endoftext|>")
    assert manifest.metadata["build"]["accuracy"]["token_agreement"] == 1.0
    assert {"tokenizer.json", "tokenizer_config.json", "generation_config.json"} <= \
        set(manifest.files)
    built = make_service(out)  # the manifest names the pipeline
    assert built.warmup_status == "ok"
    source = make_service(decoder_dir, pipeline="generate")
    # the vocabulary projection of the last position only: the same tokens, in ORT's choice
    # and through the Python row (a repetition penalty)
    assert manifest.metadata["last_position_logits"] is True
    logits = next(o for o in onnx.load(str(out / manifest.model)).graph.output
                  if o.name == "logits")
    assert logits.type.tensor_type.shape.dim[1].dim_value == 1
    for penalty in (1.0, 1.3):
        asked = {"temperature": 0, "max_tokens": 16, "details": True,
                 "repetition_penalty": penalty}
        assert predict(built, "Why is the sky blue?", **asked)[1]["details"] == \
            predict(source, "Why is the sky blue?", **asked)[1]["details"]


def test_int4_behind_the_generation_gate(tmp_path: Path, decoder_dir: Path,
                                         capsys: pytest.CaptureFixture[str],
                                         make_service: Callable[..., Any]) -> None:
    source = decoder_dir / "model.onnx"
    llama = kind_of(decoder_dir) == "llama"
    out = tmp_path / "q"
    if llama:  # random weights, near-flat logits: int4 flips a quarter of the greedy choices
        assert build(source, out, "--quantize", "int4") == 5
        assert "greedy token agreement with the fp32 model 0.7" in \
            " ".join(capsys.readouterr().err.split())
        assert not out.exists()
        assert build(source, out, "--quantize", "int4", "--min-token-agreement", "0.5") == 0
    else:  # its Gemm projections become MatMuls first; its peaked logits pass the gate
        assert build(source, out, "--quantize", "int4") == 0
    manifest = Manifest.load(out)
    quantization = manifest.metadata["quantization"]
    agreement = quantization["gate"]["token_agreement"]
    assert 0.5 <= agreement < 0.9 if llama else agreement >= 0.9
    assert (quantization["gemm_as_matmul"] > 0) is not llama
    # (the one model file shipped: the optimized or the staged one, whichever decoded faster)
    nodes = onnx.load(str(out / manifest.model), load_external_data=False).graph.node
    assert sum(n.op_type == "MatMulNBits" for n in nodes) == quantization["nodes"] > 0
    status, body = predict(make_service(out), "Hello", temperature=0, max_tokens=8)
    assert (status, body["usage"]["completion_tokens"]) == (200, 8)


def test_a_model_that_is_no_decoder_is_refused_with_what_was_expected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = models.linear(tmp_path / "linear.onnx")
    assert build(source, tmp_path / "out", "--pipeline", "generate") == 3
    err = " ".join(capsys.readouterr().err.split())
    assert "not a decoder the generate pipeline runs" in err
    assert "expected a decoder with inputs input_ids" in err


def test_a_cache_without_its_present_outputs_is_refused(tmp_path: Path, decoder_dir: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    model = onnx.load(str(decoder_dir / "model.onnx"))
    renamed = "present.1.k"
    for node in model.graph.node:
        node.output[:] = [renamed if o == "present.1.key" else o for o in node.output]
        node.input[:] = [renamed if i == "present.1.key" else i for i in node.input]
    for value in model.graph.output:
        if value.name == "present.1.key":
            value.name = renamed
    source = tmp_path / "odd.onnx"
    onnx.save(model, str(source))
    (tmp_path / "tokenizer.json").write_text((decoder_dir / "tokenizer.json").read_text())
    assert build(source, tmp_path / "out") == 3
    err = " ".join(capsys.readouterr().err.split())
    assert "no present.1.key output for past_key_values.1.key" in err


def test_a_decoder_onnxruntime_cannot_load_is_refused_in_one_line(
        tmp_path: Path, decoder_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its signature is a decoder's (read from the file, no session), so the first session on
    it, the reference's, gives onnxruntime's verdict: a clear error, nothing left behind."""
    model = onnx.load(str(decoder_dir / "model.onnx"))
    model.graph.node[0].op_type = "NoSuchOperator"
    source = tmp_path / "odd.onnx"
    onnx.save(model, str(source))
    (tmp_path / "tokenizer.json").write_text((decoder_dir / "tokenizer.json").read_text())
    assert build(source, tmp_path / "out") == 3
    err = " ".join(capsys.readouterr().err.split())
    assert f"{source}: onnxruntime cannot load it:" in err and "NoSuchOperator" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_manifest_is_json_a_runtime_reads(tmp_path: Path, decoder_dir: Path) -> None:
    out = tmp_path / "built"
    assert build(decoder_dir / "model.onnx", out, "--no-optimize") == 0
    data = json.loads((out / "model.json").read_text())
    assert data["model"] == data["portable"] == "model.onnx"
    assert data["example"] == "Hello"


def test_gemm_becomes_matmul_with_the_same_outputs(tmp_path: Path) -> None:
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from onnx_lambda.build_model.decoder_build import gemm_as_matmul

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((6, 4)).astype(np.float32)  # [N, K]: transB
    bias = rng.standard_normal(6).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, beta=0.5, name="g"),
         helper.make_node("Gemm", ["y", "v"], ["z"], name="h")], "gemms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 3])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b"),
         numpy_helper.from_array(rng.standard_normal((6, 3)).astype(np.float32), "v")])
    source, target = tmp_path / "gemm.onnx", tmp_path / "matmul.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(source))
    assert gemm_as_matmul(source, target) == 2
    assert {n.op_type for n in onnx.load(str(target)).graph.node} == {"MatMul", "Add"}
    x = rng.standard_normal((5, 4)).astype(np.float32)
    before, after = (ort.InferenceSession(str(p)).run(None, {"x": x})[0]
                     for p in (source, target))
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_calibrated_int4_algorithms_are_refused_for_decoders(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.support import decoders

    source = decoders.folder(tmp_path_factory, "llama") / "model.onnx"
    assert build(source, tmp_path / "out", "--quantize", "int4", "--algo", "gptq") == 1
    assert "--algo gptq: a decoder's int4 is rtn or minmax or mixed or hqq" in \
        capsys.readouterr().err


@pytest.mark.parametrize("method", ["int8-weights", "int4"])
def test_prefill_logits_are_the_same_alone_and_in_a_batch_of_8(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, method: str) -> None:
    """Weight-only blocks quantize activations per block of one row: each prompt's logits are
    the same whether it is prefilled alone or beside 7 others."""
    import numpy as np
    import onnxruntime as ort

    from tests.support import decoders

    out = tmp_path / "q"
    source = decoders.folder(tmp_path_factory, "llama") / "model.onnx"
    assert build(source, out, "--quantize", method, "--min-token-agreement", "0") == 0
    manifest = Manifest.load(out)
    decoder = manifest.metadata["decoder"]
    session = ort.InferenceSession(str(out / manifest.model), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    ids = np.random.default_rng(0).integers(3, 500, (8, 6))

    def logits(rows: np.ndarray) -> np.ndarray:
        batch, length = rows.shape
        feeds = {"input_ids": rows, "attention_mask": np.ones_like(rows),
                 "position_ids": np.tile(np.arange(length), (batch, 1))}
        empty = np.zeros((batch, decoder["kv_heads"], 0, decoder["head_dim"]), np.float32)
        feeds |= {n: empty for n in names if n.startswith("past_key_values.")}
        return session.run(["logits"], {k: v for k, v in feeds.items() if k in names})[0]

    together = logits(ids)
    for row in range(8):
        alone = logits(ids[row:row + 1])[0]
        np.testing.assert_allclose(together[row], alone, rtol=0, atol=1e-4)


def test_a_large_vocabulary_projection_is_split_into_blocks_with_the_same_tokens(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        make_service: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of at most ``BLOCK_BYTES`` (made small here: the tiny decoder's projection is
    small) joined on the vocabulary axis: the artifact answers as the source does. The Llama
    decoder: its projection weight is an initializer of its own (GPT-2's is tied)."""
    import numpy as np

    from onnx_lambda.build_model import vocab_projection
    from tests.support import decoders

    decoder_dir = decoders.folder(tmp_path_factory, "llama")
    source = onnx.load(str(decoder_dir / "model.onnx"))
    logits = next(n for n in source.graph.node if "logits" in n.output)
    weight = next(t for t in source.graph.initializer if t.name == logits.input[1])
    size = weight.dims[0] * weight.dims[1] * 4
    monkeypatch.setattr(vocab_projection, "BLOCK_BYTES", size // 3 + 1)
    out = tmp_path / "built"
    assert build(decoder_dir / "model.onnx", out) == 0
    manifest = Manifest.load(out)
    assert manifest.metadata["vocabulary_blocks"] == 3
    graph = onnx.load(str(out / manifest.model)).graph
    join = next(n for n in graph.node if "logits" in n.output)
    assert join.op_type == "Concat" and len(join.input) == 3
    blocks = {t.name: list(t.dims) for t in graph.initializer if ".block" in t.name}
    assert sorted(dims[1] for dims in blocks.values()) == sorted(
        len(part) for part in np.array_split(np.arange(weight.dims[1]), 3))
    built, reference = make_service(out), make_service(decoder_dir, pipeline="generate")
    asked = {"temperature": 0, "max_tokens": 16, "details": True}
    assert predict(built, "Why is the sky blue?", **asked)[1]["details"] == \
        predict(reference, "Why is the sky blue?", **asked)[1]["details"]


def test_a_tied_projection_weight_stays_for_the_node_that_shares_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np
    from onnx import helper, numpy_helper

    from onnx_lambda.build_model import vocab_projection

    weight = numpy_helper.from_array(np.zeros((4, 10), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["h", "w"], ["logits"], name="head"),
             helper.make_node("Transpose", ["w"], ["table"], name="tied")]
    graph = helper.make_graph(nodes, "g", [], [], [weight])
    assert vocab_projection.split_projection(graph, graph.node[0]) == 1  # 160 bytes: small
    monkeypatch.setattr(vocab_projection, "BLOCK_BYTES", 64)
    assert vocab_projection.split_projection(graph, graph.node[0]) == 3
    names = {t.name for t in graph.initializer}
    assert "w" in names and {"w.block0", "w.block1", "w.block2"} <= names
    assert [n.op_type for n in graph.node] == ["MatMul", "MatMul", "MatMul", "Concat",
                                               "Transpose"]
