"""Generated models and files for the build-model and pipeline tests (``onnx.helper``,
``tokenizers``): small enough to build in well under a second."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_lambda.tiny_models import OPSET, save

WORDS = ("hello", "world", "the", "cat", "sat", "on", "mat", "dog", "runs", "fast")
VOCAB = {"[PAD]": 0, "[UNK]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}


def _weight(name: str, array: np.ndarray) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(array.astype(np.float32), name)


def mlp(path: Path, *, features: int = 32, hidden: int = 64, classes: int = 5,
        seed: int = 0, opset: int = OPSET) -> Path:
    """x: float32[batch, features] → logits: float32[batch, classes] (two MatMuls + Relu)."""
    rng = np.random.default_rng(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])
    inits = [_weight("W1", rng.standard_normal((features, hidden)) / np.sqrt(features)),
             _weight("b1", rng.standard_normal(hidden) * 0.1),
             _weight("W2", rng.standard_normal((hidden, classes)) / np.sqrt(hidden))]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h0"], name="first"),
             helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "W2"], ["logits"], name="second")]
    return save(helper.make_graph(nodes, "mlp", [x], [y], inits), path, opset=opset)


def probabilities(path: Path, *, features: int = 8, classes: int = 3) -> Path:
    """x → Softmax(x @ W): an output that already holds probabilities."""
    rng = np.random.default_rng(1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes])
    nodes = [helper.make_node("MatMul", ["x", "W"], ["z"]),
             helper.make_node("Softmax", ["z"], ["probs"], axis=-1)]
    graph = helper.make_graph(nodes, "probs", [x], [y],
                              [_weight("W", rng.standard_normal((features, classes)))])
    return save(graph, path)


def custom_op(path: Path) -> Path:
    """A node from a domain onnxruntime does not implement."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")
    return save(helper.make_graph([node], "custom", [x], [y]), path, domains={"com.example": 1},
                check=False)


def token_embeddings(path: Path, *, dim: int = 6, seed: int = 0, opset: int = OPSET,
                     names: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids"),
                     rows: int = len(VOCAB)) -> tuple[Path, np.ndarray]:
    """``names`` (input_ids first): int64[batch, sequence] →
    last_hidden_state: float32[batch, sequence, dim], each token's row of a random table of
    ``rows`` tokens (returned, so tests can compute the expected pooling themselves)."""
    table = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in names]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        ["batch", "sequence", dim])
    # The other inputs take part (times zero) so that onnxruntime keeps them as inputs.
    unsqueeze = (helper.make_node("Unsqueeze", ["nothing_f", "last_axis"], ["nothing_3d"])
                 if opset >= 13 else
                 helper.make_node("Unsqueeze", ["nothing_f"], ["nothing_3d"], axes=[2]))
    added = [helper.make_node("Add", [names[0] if i == 1 else f"both{i - 1}", n], [f"both{i}"])
             for i, n in enumerate(names[1:], start=1)]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["rows"]), *added,
             helper.make_node("Mul", [f"both{len(added)}" if added else names[0], "zero"],
                              ["nothing"]),
             helper.make_node("Cast", ["nothing"], ["nothing_f"], to=TensorProto.FLOAT),
             unsqueeze,
             helper.make_node("Add", ["rows", "nothing_3d"], ["last_hidden_state"])]
    inits = [_weight("table", table), onnx.numpy_helper.from_array(np.int64(0), "zero"),
             onnx.numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis")]
    graph = helper.make_graph(nodes, "tokens", inputs, [out], inits)
    return save(graph, path, opset=opset), table


def text_classifier(path: Path, *, dim: int = 8, classes: int = 3, seed: int = 0
                    ) -> tuple[Path, np.ndarray, np.ndarray]:
    """A sequence classifier as a transformer exports one: input_ids, attention_mask
    int64[batch, sequence] → logits float32[batch, classes], the masked mean of each token's row
    of a random table times a random head (both returned, for the expected logits)."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((len(VOCAB), dim)).astype(np.float32)
    head = rng.standard_normal((dim, classes)).astype(np.float32)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["rows"]),
             helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["mask", "last_axis"], ["mask3"]),
             helper.make_node("Mul", ["rows", "mask3"], ["kept"]),
             helper.make_node("ReduceSum", ["kept", "sequence_axis"], ["total"], keepdims=0),
             helper.make_node("ReduceSum", ["mask", "sequence_axis"], ["count"], keepdims=1),
             helper.make_node("Div", ["total", "count"], ["mean"]),
             helper.make_node("MatMul", ["mean", "head"], ["logits"], name="head")]
    inits = [_weight("table", table), _weight("head", head),
             onnx.numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
             onnx.numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence_axis")]
    graph = helper.make_graph(nodes, "text_classifier", inputs, [out], inits)
    return save(graph, path), table, head


def cross_encoder(path: Path, *, dim: int = 4, classes: int = 1, seed: int = 0
                  ) -> tuple[Path, np.ndarray]:
    """A cross-encoder as a transformer exports one: input_ids, attention_mask, token_type_ids
    int64[batch, sequence] → logits float32[batch, classes]. The logit is the dot product of the
    query's summed token rows (segment 0) and the passage's (segment 1) of a random table
    (returned, for the expected scores); a 2-logit head answers [-logit, logit]."""
    table = np.random.default_rng(seed).standard_normal((len(VOCAB), dim)).astype(np.float32)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["rows"]),
             helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["token_type_ids"], ["segment"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["mask", "segment"], ["in_passage"]),
             helper.make_node("Sub", ["mask", "in_passage"], ["in_query"])]
    for side in ("query", "passage"):
        nodes += [helper.make_node("Unsqueeze", [f"in_{side}", "last_axis"], [f"{side}_3d"]),
                  helper.make_node("Mul", ["rows", f"{side}_3d"], [f"{side}_rows"]),
                  helper.make_node("ReduceSum", [f"{side}_rows", "sequence_axis"], [side],
                                   keepdims=0)]
    nodes += [helper.make_node("Mul", ["query", "passage"], ["products"]),
              helper.make_node("ReduceSum", ["products", "last_axis"],
                               ["logits" if classes == 1 else "logit"], keepdims=1)]
    if classes == 2:
        nodes += [helper.make_node("Neg", ["logit"], ["negative"]),
                  helper.make_node("Concat", ["negative", "logit"], ["logits"], axis=1)]
    inits = [_weight("table", table),
             onnx.numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence_axis"),
             onnx.numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis")]
    graph = helper.make_graph(nodes, "cross_encoder", inputs, [out], inits)
    return save(graph, path), table


def word_tokenizer(path: Path) -> Path:
    """A whitespace word-level ``tokenizer.json`` over ``VOCAB`` (no special tokens added)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(path))
    return path


def wordpiece_vocab() -> dict[str, int]:
    """A BERT-style WordPiece vocabulary: special tokens, ASCII words and characters with their
    ``##`` continuations, accented Latin, Cyrillic, CJK and a few emoji."""
    words = [*WORDS, "un", "##able", "##s", "##ing", "##ed", "café", "lambda", "aws"]
    specials = ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # numbered after words, as BERT's are
    chars = [*(chr(c) for c in range(0x21, 0x7F)), *(chr(c) for c in range(0xE0, 0x100)),
             *(chr(c) for c in range(0x430, 0x450)), *(chr(c) for c in range(0x4E00, 0x4E80)),
             "😀", "👍"]
    tokens = ["[PAD]", *words, *specials, *chars, *(f"##{c}" for c in chars[:120])]
    return {token: i for i, token in enumerate(dict.fromkeys(tokens))}


def wordpiece_tokenizer(path: Path) -> Path:
    """A BERT-style ``tokenizer.json`` (normaliser, pre-tokenizer, [CLS]/[SEP] template,
    special tokens added) over ``wordpiece_vocab()``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = wordpiece_vocab()
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=20))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tokenizer.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tokenizer.save(str(path))
    return path


def chain(path: Path, *, layers: int = 12, width: int = 64, seed: int = 0) -> Path:
    """x: float32[batch, width] → y: ``layers`` MatMul + Tanh blocks (many quantizable nodes:
    the quantizer's tuning has work to do)."""
    rng = np.random.default_rng(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])
    nodes, inits, current = [], [], "x"
    for i in range(layers):
        inits.append(_weight(f"W{i}", rng.standard_normal((width, width)) / np.sqrt(width)))
        nodes += [helper.make_node("MatMul", [current, f"W{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Tanh", [f"m{i}"], [f"t{i}" if i < layers - 1 else "y"])]
        current = f"t{i}"
    return save(helper.make_graph(nodes, "chain", [x], [y], inits), path)


def rows_through(path: Path, *, projection: np.ndarray | None = None) -> Path:
    """A model of this module whose token rows come from a ``Gather`` into ``rows``
    (``token_embeddings``, ``cross_encoder``), rewritten in place: the rows times
    ``projection`` (a MatMul with a constant weight, for the quantizers), or, without one,
    shifted by their largest absolute value over the whole batch — an item's answer then
    depends on its neighbours and their padding, as under dynamic INT8's one activation scale
    per tensor (a shift, not a scale: normalised vectors would not see a scale)."""
    model = onnx.load(str(path))
    index, gather = next((i, n) for i, n in enumerate(model.graph.node) if n.output[0] == "rows")
    gather.output[0] = "rows.raw"
    if projection is not None:
        model.graph.initializer.append(_weight("projection", projection))
        added = [helper.make_node("MatMul", ["rows.raw", "projection"], ["rows"],
                                  name="projection")]
    else:
        added = [helper.make_node("Abs", ["rows.raw"], ["rows.abs"]),
                 helper.make_node("ReduceMax", ["rows.abs"], ["rows.max"], keepdims=1),
                 helper.make_node("Add", ["rows.raw", "rows.max"], ["rows"])]
    for offset, node in enumerate(added, start=1):
        model.graph.node.insert(index + offset, node)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
