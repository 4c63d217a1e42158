"""A decoder-only language model with random weights, made from a ``transformers`` config and
exported to ONNX in the common layout (the one optimum, ``torch.onnx`` and onnxruntime-genai
produce), with a tiny byte-level BPE tokenizer trained at build time. For tests and benchmarks:
random weights generate nonsense, but the graph, the cache and the speed are a real model's.

Layout: inputs ``input_ids`` [batch, sequence] int64, ``attention_mask`` [batch, total] int64,
``position_ids`` [batch, sequence] int64 (both kinds take it, as optimum's exports do), and
``past_key_values.N.key`` / ``.value`` [batch, kv_heads, past, head_dim] float32; outputs
``logits`` [batch, sequence, vocab] and ``present.N.key`` / ``.value`` [batch, kv_heads, total,
head_dim]. The prefill feeds a past of length 0.

``export(kind, size, out_dir, seed)`` writes ``model.onnx``, ``tokenizer.json``,
``tokenizer_config.json`` (a Jinja ``chat_template``, ``bos_token``, ``eos_token``) and
``generation_config.json`` (``eos_token_id``, ``bos_token_id``), ``config.json`` and
onnxruntime-genai's ``genai_config.json`` for the same graph, and checks the export's logits
against transformers (prefill and decode steps) within ``EXPORT_TOLERANCE`` of the logits'
scale.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any, NamedTuple

KINDS = ("llama", "gpt2")
# the largest difference to transformers, relative to the values' own scale (the largest
# |value|, at least 1): float32 sums over a 1,024-wide, 16-layer model round at ~1e-4 of logits
# in the tens, where the tiny model's stay under 1e-4 absolute
EXPORT_TOLERANCE = 1e-4
BOS, EOS, PAD = "<s>", "</s>", "<pad>"
GPT2_EOS = "<|endoftext|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}")


class Size(NamedTuple):
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    context: int


SIZES: dict[str, Size] = {
    # tests: seconds to build, milliseconds a token
    "tiny": Size(vocab=512, hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128,
                 context=256),
    # a real vocabulary on a small body: what choosing a token costs, beside a step
    "small": Size(vocab=32000, hidden=256, layers=4, heads=8, kv_heads=4, intermediate=704,
                  context=1024),
    # benchmarks: a few hundred million parameters (about Qwen2.5-0.5B's shape)
    "realistic": Size(vocab=32000, hidden=1024, layers=16, heads=16, kv_heads=4,
                      intermediate=2816, context=2048),
}


def config(kind: str, size: Size) -> Any:
    """The transformers config of a ``kind`` model at ``size`` (eager attention: the export's
    math is then the plain one the check compares)."""
    import transformers

    if kind == "llama":
        return transformers.LlamaConfig(
            vocab_size=size.vocab, hidden_size=size.hidden, num_hidden_layers=size.layers,
            num_attention_heads=size.heads, num_key_value_heads=size.kv_heads,
            intermediate_size=size.intermediate, max_position_embeddings=size.context,
            bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False,
            attn_implementation="eager")
    if kind == "gpt2":
        return transformers.GPT2Config(
            vocab_size=size.vocab, n_embd=size.hidden, n_layer=size.layers, n_head=size.heads,
            n_inner=size.intermediate, n_positions=size.context, bos_token_id=0, eos_token_id=0,
            attn_implementation="eager")
    raise ValueError(f"unknown decoder kind {kind!r}: {', '.join(KINDS)}")


def corpus() -> list[str]:
    from onnx_lambda.examples.sentences import SENTENCES

    return list(SENTENCES)


def train_tokenizer(kind: str, vocab: int) -> Any:
    """A byte-level BPE of ``vocab`` tokens on the fixed sentences (ids 0.. are the special
    tokens). Llama-style prepends BOS; GPT-2-style adds nothing, as GPT-2's own does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = [PAD, BOS, EOS] if kind == "llama" else [GPT2_EOS]
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(corpus() * 4, trainer)
    if kind == "llama":
        bos = tokenizer.token_to_id(BOS)
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos)])
    else:
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def build_torch(kind: str, size: Size, seed: int) -> Any:
    import torch
    import transformers

    torch.manual_seed(seed)
    cls = (transformers.LlamaForCausalLM if kind == "llama" else transformers.GPT2LMHeadModel)
    model = cls(config(kind, size)).eval()
    # a random init's tiny scale makes every logit near equal and greedy text one repeated token:
    # wider weights give varied tokens, and logits far enough apart that float rounding in
    # another runtime cannot swap the top two
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(4.0 if parameter.dim() > 1 else 1.0)
    return model


def flat_model(model: Any, layers: int) -> Any:
    """forward(input_ids, attention_mask, position_ids, past) → (logits, *present): the
    transformers model with its cache as a flat list of tensors (a DynamicCache inside, the
    Cache object transformers 5 takes)."""
    import torch
    from transformers import DynamicCache

    class Flat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any,
                    past: list[Any]) -> Any:
            cache = DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(layers)])
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=cache, use_cache=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    return Flat().eval()


def cache_heads(kind: str, size: Size) -> int:
    """Key/value heads: Llama-style groups queries (GQA); GPT-2 has one per query head."""
    return size.kv_heads if kind == "llama" else size.heads


def names(layers: int) -> tuple[list[str], list[str]]:
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids", *past], ["logits", *present]


def _feeds(size: Size, batch: int, past: int, new: int, seed: int) -> dict[str, Any]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    head_dim = size.hidden // size.heads
    kv = size.kv_heads
    feeds: dict[str, Any] = {
        "input_ids": torch.randint(3, size.vocab, (batch, new), generator=generator),
        "attention_mask": torch.ones(batch, past + new, dtype=torch.int64),
        "position_ids": torch.arange(past, past + new, dtype=torch.int64).expand(batch, new)
        .contiguous()}
    for i in range(size.layers):
        for part in ("key", "value"):
            feeds[f"past_key_values.{i}.{part}"] = torch.randn(
                batch, kv, past, head_dim, generator=generator)
    return feeds


def _args(feeds: dict[str, Any]) -> tuple[Any, ...]:
    values = list(feeds.values())
    return (*values[:3], values[3:])


def export_onnx(model: Any, kind: str, size: Size, path: Path) -> None:
    import torch

    inputs, outputs = names(size.layers)
    flat = flat_model(model, size.layers)
    # batch 2 and a past of 3: torch.export specialises a dimension whose example is 0 or 1
    example = _feeds(size._replace(kv_heads=cache_heads(kind, size)), 2, 3, 4, 0)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    past, total = torch.export.Dim("past"), torch.export.Dim("total")
    dynamic: dict[str, Any] = {"input_ids": {0: batch, 1: sequence},
                               "attention_mask": {0: batch, 1: total},
                               "position_ids": {0: batch, 1: sequence}}
    dynamic.update({name: {0: batch, 2: past} for name in inputs[3:]})
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(flat, _args(example), str(path), input_names=inputs,
                          output_names=outputs, dynamo=True, external_data=False,
                          dynamic_shapes=(*(dynamic[n] for n in inputs[:3]),
                                          [dynamic[n] for n in inputs[3:]]), verbose=False)


def check_export(model: Any, kind: str, size: Size, path: Path) -> float:
    """The largest logit difference to transformers over a prefill (empty past) and a decode
    step (a past of 5); raises past ``EXPORT_TOLERANCE``."""
    import numpy as np
    import onnxruntime as ort
    import torch

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    flat = flat_model(model, size.layers)
    kv_size = size._replace(kv_heads=cache_heads(kind, size))
    worst, scale = 0.0, 1.0
    for past, new in ((0, 6), (5, 1), (7, 3)):
        feeds = _feeds(kv_size, 2, past, new, seed=past + new)
        got = session.run(None, {k: v.numpy() for k, v in feeds.items()})
        with torch.inference_mode():
            want = flat(*_args(feeds))
        for g, w in zip(got, want, strict=True):
            worst = max(worst, float(np.abs(g - w.numpy()).max()))
            scale = max(scale, float(np.abs(w.numpy()).max()))
    if worst > EXPORT_TOLERANCE * scale:
        raise RuntimeError(f"{kind} decoder: the ONNX export differs from transformers (max abs "
                           f"diff {worst:.3g} > {EXPORT_TOLERANCE} × {scale:.3g})")
    return worst


def tokenizer_config(kind: str) -> dict[str, Any]:
    if kind == "llama":
        return {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "add_bos_token": True,
                "chat_template": CHAT_TEMPLATE, "model_max_length": 0}
    return {"bos_token": GPT2_EOS, "eos_token": GPT2_EOS, "add_bos_token": False,
            "chat_template": CHAT_TEMPLATE, "model_max_length": 0}


def genai_config(kind: str, size: Size, cfg: Any) -> dict[str, Any]:
    """onnxruntime-genai's ``genai_config.json`` for the same file: the benchmarks run its
    decode loop on our very graph (the cache concatenates, so no shared past/present buffer)."""
    layers = size.layers
    inputs, outputs = names(layers)
    return {"model": {
        "type": kind, "context_length": size.context, "vocab_size": size.vocab,
        "bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id,
        "pad_token_id": cfg.pad_token_id if cfg.pad_token_id is not None else cfg.eos_token_id,
        "decoder": {
            "filename": "model.onnx", "head_size": size.hidden // size.heads,
            "hidden_size": size.hidden, "num_attention_heads": size.heads,
            "num_hidden_layers": layers, "num_key_value_heads": cache_heads(kind, size),
            "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
            "inputs": {"input_ids": inputs[0], "attention_mask": inputs[1],
                       "position_ids": inputs[2], "past_key_names": "past_key_values.%d.key",
                       "past_value_names": "past_key_values.%d.value"},
            "outputs": {"logits": outputs[0], "present_key_names": "present.%d.key",
                        "present_value_names": "present.%d.value"}}},
        "search": {"do_sample": False, "max_length": size.context, "num_beams": 1,
                   "past_present_share_buffer": False, "repetition_penalty": 1.0,
                   "temperature": 1.0, "top_k": 1, "top_p": 1.0}}


def export(kind: str, size: str | Size, out_dir: Path, seed: int = 0) -> Path:
    """Build the ``kind`` decoder at ``size`` (a name of ``SIZES`` or a ``Size``) with weights
    from ``seed`` into ``out_dir``; returns the folder. The export is checked against
    transformers."""
    shape = SIZES[size] if isinstance(size, str) else size
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(kind, shape.vocab)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    settings = tokenizer_config(kind)
    settings["model_max_length"] = shape.context
    (out_dir / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    model = build_torch(kind, shape, seed)
    cfg = model.config
    (out_dir / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id}, indent=2) + "\n")
    cfg.save_pretrained(out_dir)  # config.json: what transformers rebuilds it from
    (out_dir / "genai_config.json").write_text(
        json.dumps(genai_config(kind, shape, cfg), indent=2) + "\n")
    exported = out_dir / "model.onnx.partial"  # model.onnx only once it passed the check
    export_onnx(model, kind, shape, exported)
    check_export(model, kind, shape, exported)
    exported.rename(out_dir / "model.onnx")
    return out_dir
