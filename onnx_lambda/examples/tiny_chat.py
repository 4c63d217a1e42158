"""``tiny-chat``: a decoder-only language model small enough to build in seconds with no download
and no torch, for trying the generation routes (``/v1/chat/completions``, ``/v1/completions``,
streaming) in a minute. Its weights are random: it answers nonsense, at a real decoder's pace.

One attention layer with one key/value head, written with ``onnx.helper`` in the layout the
``generate`` pipeline takes (``handler.generation.layout``): inputs ``input_ids``,
``attention_mask``, ``past_key_values.0.key`` / ``.value`` [batch, 1, past, head_dim]; outputs
``logits`` [batch, sequence, vocab] and ``present.0.key`` / ``.value``. With one layer the cache
holds projections of the embeddings alone, so attending to every position (no causal mask)
gives the same last-position logits in a prefill as step by step. The tokenizer (a byte-level
BPE trained on the fixed sentences) and the chat template are the test decoders'
(``onnx_lambda.examples.decoder``), made with ``tokenizers`` only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from rich.console import Console

from onnx_lambda.build_model.spec import ModelSpec
from onnx_lambda.examples import decoder

VOCAB = 512
HIDDEN = 32
CONTEXT = 256
SEED = 0


def graph(vocab: int, hidden: int, seed: int, bias: np.ndarray) -> object:
    """The one-layer decoder as an ``onnx.ModelProto``, ``hidden`` wide plus one constant
    feature (1 in every embedding, 0 in every projection) whose output weights are ``bias``,
    one per token: random logits would favour stray bytes as much as word pieces."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    width = hidden + 1

    def weight(rows: int, columns: int, scale: float = 1.0) -> np.ndarray:
        return scale * rng.standard_normal((rows, columns)) / np.sqrt(rows)

    embedding = np.concatenate([weight(vocab, hidden),
                                np.ones((vocab, 1))], axis=1)
    projections = {}
    for name in ("query", "key", "value"):
        projections[name] = weight(width, width)
        projections[name][:, hidden] = 0  # the constant feature stays 1 through the residual
    w_out = np.concatenate([weight(hidden, vocab, 6.0) * (bias == 0), bias[None, :]], axis=0)

    def tensor(array: np.ndarray, name: str) -> object:
        return numpy_helper.from_array(np.asarray(array, np.float32), name)

    kv = ["batch", 1, "past", width]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
        helper.make_tensor_value_info("past_key_values.0.key", TensorProto.FLOAT, kv),
        helper.make_tensor_value_info("past_key_values.0.value", TensorProto.FLOAT, kv)]
    total = ["batch", 1, "total", width]
    outputs = [
        helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", vocab]),
        helper.make_tensor_value_info("present.0.key", TensorProto.FLOAT, total),
        helper.make_tensor_value_info("present.0.value", TensorProto.FLOAT, total)]
    constants = [
        tensor(embedding, "embedding"), tensor(w_out, "w_out"),
        *(tensor(w, f"w_{name}") for name, w in projections.items()),
        numpy_helper.from_array(np.array([1], np.int64), "axis_1"),
        numpy_helper.from_array(np.array([1, 2], np.int64), "axes_1_2"),
        numpy_helper.from_array(np.array(1 / np.sqrt(width), np.float32), "scale"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(-1e4, np.float32), "masked")]
    node = helper.make_node
    nodes = [
        node("Gather", ["embedding", "input_ids"], ["states"]),
        *(node("MatMul", ["states", f"w_{n}"], [f"{n}_flat"]) for n in ("query", "key", "value")),
        *(node("Unsqueeze", [f"{n}_flat", "axis_1"], [f"{n}_new"])
          for n in ("query", "key", "value")),
        node("Concat", ["past_key_values.0.key", "key_new"], ["present.0.key"], axis=2),
        node("Concat", ["past_key_values.0.value", "value_new"], ["present.0.value"], axis=2),
        node("Transpose", ["present.0.key"], ["key_t"], perm=[0, 1, 3, 2]),
        node("MatMul", ["query_new", "key_t"], ["scores_raw"]),
        node("Mul", ["scores_raw", "scale"], ["scores_scaled"]),
        # padding (mask 0) gets a large negative score: [batch, total] -> [batch, 1, 1, total]
        node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        node("Sub", ["one", "mask_float"], ["unmasked"]),
        node("Mul", ["unmasked", "masked"], ["bias_flat"]),
        node("Unsqueeze", ["bias_flat", "axes_1_2"], ["bias"]),
        node("Add", ["scores_scaled", "bias"], ["scores"]),
        node("Softmax", ["scores"], ["weights"], axis=-1),
        node("MatMul", ["weights", "present.0.value"], ["attended_4d"]),
        node("Squeeze", ["attended_4d", "axis_1"], ["attended"]),
        node("Add", ["states", "attended"], ["hidden"]),
        node("MatMul", ["hidden", "w_out"], ["logits"])]
    model = helper.make_model(
        helper.make_graph(nodes, "tiny-chat", inputs, outputs, constants),
        opset_imports=[helper.make_opsetid("", 17)], producer_name="onnx-lambda tiny-chat")
    model.ir_version = 8  # what onnxruntime 1.16+ reads
    return model


def write(folder: Path, seed: int = SEED) -> Path:
    """``model.onnx`` and the Hugging Face files beside it in ``folder``; returns the model."""
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = decoder.train_tokenizer("llama", VOCAB)
    tokenizer.save(str(folder / "tokenizer.json"))
    # word pieces (BPE merges) are said, bytes and specials hardly; EOS at a fixed logit, under
    # the best word's (greedy never stops early) and a few % of a sampled token's mass
    bias = np.full(VOCAB, -30.0)
    for token, index in tokenizer.get_vocab().items():
        if len(token) > 1 and not token.startswith("<"):
            bias[index] = 0.0
    bias[tokenizer.token_to_id(decoder.EOS)] = 2.0
    settings = {**decoder.tokenizer_config("llama"), "model_max_length": CONTEXT}
    (folder / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 1, "eos_token_id": 2}, indent=2) + "\n")
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "tiny-chat", "vocab_size": VOCAB, "hidden_size": HIDDEN,
         "num_hidden_layers": 1, "max_position_embeddings": CONTEXT}, indent=2) + "\n")
    path = folder / "model.onnx"
    model = graph(VOCAB, HIDDEN, seed, bias)
    onnx.checker.check_model(model, full_check=True)  # type: ignore[arg-type]
    onnx.save(model, str(path))  # type: ignore[arg-type]
    return path


def prepare(workdir: Path, console: Console) -> ModelSpec:
    with console.status("tiny-chat: writing the graph and training its tokenizer"):
        path = write(workdir / "tiny-chat")
    console.print("    tiny-chat: random weights, one layer: it answers nonsense, for trying "
                  "the routes", highlight=False)
    return ModelSpec(source=path, name="tiny-chat", pipeline="generate", example="Hello")
