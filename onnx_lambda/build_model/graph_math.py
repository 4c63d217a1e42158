"""Append the pipelines' math to the model graph, so the runtime only maps names and labels.

- ``classifier``: Softmax over the class scores (only when they are logits: see
  ``are_probabilities``), then TopK with k = the ``top_k`` option capped at the class count.
  New outputs ``probabilities`` [batch, classes] (the model's own when it already has them),
  ``scores`` [batch, k] and ``indices`` int64 [batch, k]; the model's outputs stay (they are
  class-sized: cheap).
- ``text-embedding``: masked mean pooling over the attention mask (or the first token, ``cls``)
  and L2 normalisation into ``sentence_embedding`` [batch, dim]; the token-level hidden state is
  dropped from the outputs ([batch, sequence, dim]: the costly one to copy out of the session).

Every op is written for the model's own ``ai.onnx`` opset (from 11): the reductions take their
axes as an attribute before 13 (``ReduceSum``) or 18 (``ReduceL2``), as an input after;
``Unsqueeze`` likewise from 13. The roles → output names go into the manifest's
``graph_outputs``, which the runtime pipelines read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from handler.manifest import tokenizer_file
from handler.pipelines.classifier import are_probabilities
from onnx_lambda.build_model.gate import Comparable, Feeds

MIN_OPSET = 11
PIPELINES = ("classifier", "text-embedding")
DEFAULT_TOP_K = 5  # the classifier pipeline's default
PREFIX = "onnx_lambda/"
PROBABILITY_OPS = {"Softmax", "Sigmoid"}
ML_CLASSIFIERS = {"LinearClassifier", "SVMClassifier", "TreeEnsembleClassifier"}
PROBABILITY_TRANSFORMS = {"SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"}
_FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16}
TRANSPARENT_OPS = {"Identity", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Normalizer"}


class GraphMathError(ValueError):
    """The pipeline's math cannot be appended to this model (the build says why)."""


@dataclass
class Appended:
    model: onnx.ModelProto
    outputs: dict[str, str]  # role → graph output name (the manifest's ``graph_outputs``)
    note: dict[str, Any] = field(default_factory=dict)  # what was appended, for the manifest
    # pipeline_options to record instead of the spec's: an older runtime (which reads no
    # graph_outputs) then still finds its output, e.g. the pooled embedding.
    options: dict[str, Any] = field(default_factory=dict)


def opset(model: onnx.ModelProto) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise GraphMathError("the model imports no ai.onnx opset")
    return max(versions)


class _Writer:
    """New nodes, constants and outputs for ``model``, named so they collide with nothing."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.graph = model.graph
        self.opset = opset(model)
        if self.opset < MIN_OPSET:
            raise GraphMathError(f"opset {self.opset} < {MIN_OPSET}")
        self.taken = {name for node in self.graph.node for name in (*node.input, *node.output)}
        self.taken |= {v.name for v in (*self.graph.input, *self.graph.output,
                                        *self.graph.initializer)}

    def unique(self, name: str) -> str:
        candidate, n = name, 1
        while candidate in self.taken:
            n += 1
            candidate = f"{name}_{n}"
        self.taken.add(candidate)
        return candidate

    def const(self, hint: str, value: np.ndarray) -> str:
        name = self.unique(PREFIX + hint)
        self.graph.initializer.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], hint: str = "", **attributes: Any) -> str:
        out = self.unique(hint or PREFIX + op.lower())
        self.graph.node.append(helper.make_node(op, inputs, [out], name=self.unique(
            PREFIX + op), **attributes))
        return out

    def reduce(self, op: str, x: str, axis: int, keepdims: bool) -> str:
        axes_as_input = self.opset >= (13 if op == "ReduceSum" else 18)
        if axes_as_input:
            axes = self.const("axes", np.array([axis], dtype=np.int64))
            return self.node(op, [x, axes], keepdims=int(keepdims))
        return self.node(op, [x], axes=[axis], keepdims=int(keepdims))

    def unsqueeze(self, x: str, axis: int) -> str:
        if self.opset >= 13:
            return self.node("Unsqueeze", [x, self.const("axes", np.array([axis], np.int64))])
        return self.node("Unsqueeze", [x], axes=[axis])

    def as_float(self, x: str, elem_type: int) -> str:
        return x if elem_type == TensorProto.FLOAT else self.node("Cast", [x],
                                                                   to=TensorProto.FLOAT)

    def output(self, name: str, elem_type: int, shape: list[int | str | None]) -> None:
        self.graph.output.append(helper.make_tensor_value_info(name, elem_type, shape))


def _tensor_type(model: onnx.ModelProto, name: str) -> tuple[int, list[int | str | None]]:
    """Element type and shape (dims: int, symbolic name or None) of a graph value."""
    values = (*model.graph.output, *model.graph.input, *model.graph.value_info)
    value = next((v for v in values if v.name == name), None)
    if value is None or not value.type.HasField("tensor_type"):
        raise GraphMathError(f"{name!r} is not a tensor of the graph")
    tensor = value.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in tensor.shape.dim]
    return tensor.elem_type, dims


def _zipmap_type(model: onnx.ModelProto, name: str) -> tuple[int, list[int | str | None]]:
    """A ZipMap's input: float [batch, classes], the class count from its labels."""
    zipmap = next(n for n in model.graph.node if n.op_type == "ZipMap" and n.input[0] == name)
    labels = next((a for a in zipmap.attribute if a.name.startswith("classlabels")), None)
    count = len(labels.ints or labels.strings) if labels is not None else None
    return TensorProto.FLOAT, [None, count]


def _producer(model: onnx.ModelProto, name: str) -> onnx.NodeProto | None:
    return next((n for n in model.graph.node if name in n.output), None)


def produced_as_probabilities(model: onnx.ModelProto, name: str) -> bool:
    """True when ``name`` comes (through reshapes and casts) from Softmax/Sigmoid or an
    ai.onnx.ml classifier with a probability post-transform."""
    node = _producer(model, name)
    while node is not None:
        if node.op_type in PROBABILITY_OPS:
            return True
        if node.op_type in ML_CLASSIFIERS:
            transform = next((a.s.decode() for a in node.attribute
                              if a.name == "post_transform"), "NONE")
            return transform in PROBABILITY_TRANSFORMS
        if node.op_type not in TRANSPARENT_OPS:
            return False
        node = _producer(model, node.input[0])
    return False


def measured_as_probabilities(scores: np.ndarray) -> bool:
    """Non-negative rows that sum to 1: the classifier pipeline's own rule, on the samples."""
    return are_probabilities(scores.reshape(-1, scores.shape[-1]).astype(np.float64).tolist())


def scores_output(model: onnx.ModelProto, options: Mapping[str, Any]) -> tuple[str, bool]:
    """The classifier's scores tensor, and whether it is a ZipMap's input (probabilities by
    construction). Same rule as the runtime pipeline: the ``output`` option, else the first
    float output of rank 1 or 2; else the tensor a ZipMap output is made of."""
    if options.get("output"):
        return str(options["output"]), False
    for value in model.graph.output:
        tensor = value.type.tensor_type
        if (value.type.HasField("tensor_type") and tensor.elem_type in _FLOATS
                and len(tensor.shape.dim) in (1, 2)):
            return value.name, False
    zipmap = next((n for n in model.graph.node if n.op_type == "ZipMap"), None)
    if zipmap is not None:
        return zipmap.input[0], True
    raise GraphMathError("no float output of rank 1 or 2 (set pipeline_options.output)")


def classifier(model: onnx.ModelProto, options: Mapping[str, Any],
               sample_scores: np.ndarray | None) -> Appended:
    """Softmax (for logits) + TopK on a copy of ``model``. ``sample_scores``: the scores output
    on the build's samples (class count when the graph leaves it dynamic; the probabilities
    measurement when neither the option nor the graph says)."""
    model = _copy(model)
    name, from_zipmap = scores_output(model, options)
    elem_type, dims = _zipmap_type(model, name) if from_zipmap else _tensor_type(model, name)
    classes = dims[-1] if dims and isinstance(dims[-1], int) and dims[-1] > 0 else None
    if classes is None and sample_scores is not None:
        classes = int(sample_scores.shape[-1])
    if classes is None:
        raise GraphMathError(f"the class count of {name!r} is unknown")
    explicit = options.get("probabilities")
    if explicit is not None:
        probabilities, how = bool(explicit), "pipeline option"
    elif from_zipmap or produced_as_probabilities(model, name):
        probabilities, how = True, "graph"
    elif sample_scores is not None:
        probabilities, how = measured_as_probabilities(sample_scores), "measured on the samples"
    else:
        probabilities, how = False, "default"
    k = min(int(options.get("top_k", DEFAULT_TOP_K)), classes)
    w = _Writer(model)
    batch = dims[0] if len(dims) == 2 else 1
    scores = w.as_float(name, elem_type)
    if len(dims) == 1:
        scores = w.unsqueeze(scores, 0)
    appended = ["top_k"]
    if probabilities and scores == name and not from_zipmap:
        probs = name  # already a float32 [batch, classes] output of the model
    else:
        if not probabilities:
            scores = w.node("Softmax", [scores], axis=1)
            appended.insert(0, "softmax")
        probs = w.node("Identity", [scores], hint="probabilities")
        w.output(probs, TensorProto.FLOAT, [batch, classes])
    top_scores, top_indices = w.unique("scores"), w.unique("indices")
    # Sorted, largest first; ties keep the lower class index first (the ONNX spec, opset 11+).
    model.graph.node.append(helper.make_node(
        "TopK", [probs, w.const("k", np.array([k], dtype=np.int64))], [top_scores, top_indices],
        name=w.unique(PREFIX + "TopK"), axis=1, largest=1, sorted=1))
    w.output(top_scores, TensorProto.FLOAT, [batch, k])
    w.output(top_indices, TensorProto.INT64, [batch, k])
    onnx.checker.check_model(model)
    return Appended(model, {"probabilities": probs, "scores": top_scores,
                            "indices": top_indices},
                    {"appended": appended, "scores": name, "probabilities": how, "top_k": k,
                     "classes": classes, "opset": w.opset})


def text_embedding(model: onnx.ModelProto, options: Mapping[str, Any], pad_id: int = 0,
                   ) -> Appended:
    """Pooling (mean over the attention mask, or ``cls``) and L2 normalisation on a copy of
    ``model``; ``pad_id`` tells padding apart when the model takes no ``attention_mask``."""
    model = _copy(model)
    name = str(options.get("output") or model.graph.output[0].name)
    elem_type, dims = _tensor_type(model, name)
    pooling = options.get("pooling", "mean")
    normalize = bool(options.get("normalize", True))
    if len(dims) not in (2, 3):
        raise GraphMathError(f"{name!r} has rank {len(dims)}, expected 3 (tokens) or 2 (pooled)")
    w = _Writer(model)
    hidden = w.as_float(name, elem_type)
    appended = []
    if len(dims) == 3:
        if pooling == "cls":
            vectors = w.node("Gather", [hidden, w.const("first", np.array(0, np.int64))],
                             axis=1)
        else:
            mask = w.unsqueeze(_mask(w, model, pad_id), 2)  # [batch, sequence, 1]
            summed = w.reduce("ReduceSum", w.node("Mul", [hidden, mask]), 1, keepdims=False)
            count = w.reduce("ReduceSum", mask, 1, keepdims=False)
            count = w.node("Max", [count, w.const("min_count", np.array(1e-9, np.float32))])
            vectors = w.node("Div", [summed, count])
        appended.append(f"{pooling} pooling")
    else:
        vectors = hidden
    if normalize:
        norm = w.reduce("ReduceL2", vectors, 1, keepdims=True)
        norm = w.node("Max", [norm, w.const("min_norm", np.array(1e-12, np.float32))])
        vectors = w.node("Div", [vectors, norm])
        appended.append("l2 normalisation")
    embedding = w.node("Identity", [vectors], hint="sentence_embedding")
    kept = [o for o in model.graph.output if o.name != name]
    del model.graph.output[:]
    w.output(embedding, TensorProto.FLOAT, [dims[0], dims[-1]])
    model.graph.output.extend(kept)
    onnx.checker.check_model(model)
    return Appended(model, {"embedding": embedding},
                    {"appended": appended, "hidden": name, "dropped_outputs": [name],
                     "opset": w.opset},
                    {"output": embedding})


def _mask(w: _Writer, model: onnx.ModelProto, pad_id: int) -> str:
    """The float32 [batch, sequence] mask: the model's own input, else input_ids != pad_id."""
    inputs = {i.name: i for i in model.graph.input}
    if "attention_mask" in inputs:
        return w.node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    if "input_ids" not in inputs:
        raise GraphMathError("mean pooling needs an attention_mask or input_ids input")
    ids_type = inputs["input_ids"].type.tensor_type.elem_type
    pad = w.const("pad_id", np.array(pad_id, dtype=helper.tensor_dtype_to_np_dtype(ids_type)))
    padding = w.node("Equal", ["input_ids", pad])
    return w.node("Cast", [w.node("Not", [padding])], to=TensorProto.FLOAT)


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


def for_pipeline(model: onnx.ModelProto, pipeline: str, options: Mapping[str, Any],
                 files: Mapping[str, Path], sample_outputs: Mapping[str, np.ndarray],
                 ) -> Appended | None:
    """What ``build-model`` appends for ``pipeline`` (None: nothing, e.g. ``tensor`` or a user
    pipeline). ``sample_outputs``: the model's outputs on the first sample batch."""
    if pipeline == "classifier":
        name = options.get("output") or next(
            (n for n, v in sample_outputs.items()
             if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.ndim in (1, 2)), None)
        return classifier(model, options, sample_outputs.get(name) if name else None)
    if pipeline == "text-embedding":
        return text_embedding(model, options, _pad_id(files.get(tokenizer_file(options))))
    return None


def _pad_id(tokenizer: Path | None) -> int:
    """The tokenizer's padding id, as the runtime pipeline reads it (0 when it sets none)."""
    if tokenizer is None:
        return 0
    padding = json.loads(tokenizer.read_text(encoding="utf-8")).get("padding") or {}
    return int(padding.get("pad_id", 0))


def gated(comparable: Comparable, appended: Appended) -> Comparable:
    """The gate's rows without the top-k outputs: they follow from the probabilities (compared
    by cosine, and top-1), while their lower ranks may rightly swap under quantization."""
    skip = {appended.outputs[role] for role in ("scores", "indices") if role in appended.outputs}

    def rows(outputs: dict[str, Any], feeds: Feeds) -> Any:
        return comparable({k: v for k, v in outputs.items() if k not in skip}, feeds)

    return rows
