"""A decoder's ONNX layout, recognised from its signature: the names optimum, ``torch.onnx`` and
onnxruntime-genai give a causal language model with a key/value cache.

Inputs ``input_ids`` [batch, sequence] (int64 or int32), ``attention_mask`` [batch, total] and
``position_ids`` [batch, sequence] when the model has them, and per layer N
``past_key_values.N.key`` / ``past_key_values.N.value`` [batch, kv_heads, past, head_dim];
outputs ``logits`` [batch, sequence, vocab] and ``present.N.key`` / ``present.N.value``. Anything
else (a model without a cache, a merged decoder with ``use_cache_branch``, a fused cache tensor)
is refused with a message that says what was expected. ``onnx-lambda build-model`` records the
same reading in the manifest; the handler reads it again from the session, the source of truth.

onnxruntime-genai's builder leaves the head size symbolic (``[batch, kv_heads, past,
kv_cache_dim]``: its ``GroupQueryAttention`` knows it, the signature does not). ``build-model``
reads it from ``genai_config.json`` or the graph and records it as the pipeline option
``head_dim``, which ``recognise`` takes where the signature has a name, never over a number.
"""

from __future__ import annotations

from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

EXPECTED = ("a decoder with inputs input_ids, attention_mask (and position_ids when it has "
            "them), past_key_values.N.key/value [batch, kv_heads, past, head_dim], and outputs "
            "logits [batch, sequence, vocab], present.N.key/value")
_PAST = "past_key_values."
_PRESENT = "present."
_SIDE = ("key", "value")
_IDS = ("int64", "int32")
_KV_TYPES = ("float32", "float16")
SYMBOLIC_HEAD_DIM = ("build it with `onnx-lambda build-model` (it reads the head size from the "
                     "export's genai_config.json, config.json or its attention nodes), or set "
                     "the pipeline option head_dim")


class LayoutError(ValueError):
    """A model whose signature is not a decoder layout the generate pipeline runs."""


class DecoderLayout(NamedTuple):
    layers: int
    kv_heads: int
    head_dim: int
    kv_dtype: str  # float32 or float16
    ids_dtype: str  # input_ids' (and the mask's and positions') element type
    vocab: int | None  # None where the signature leaves it symbolic
    position_ids: bool
    attention_mask: bool
    logits_dtype: str

    def inputs(self) -> list[str]:
        """The input names in the order the pipeline feeds them."""
        names = ["input_ids"]
        if self.attention_mask:
            names.append("attention_mask")
        if self.position_ids:
            names.append("position_ids")
        return names + [f"{_PAST}{i}.{side}" for i in range(self.layers) for side in _SIDE]

    def outputs(self) -> list[str]:
        return ["logits"] + [f"{_PRESENT}{i}.{side}" for i in range(self.layers)
                             for side in _SIDE]

    def summary(self) -> dict[str, Any]:
        return self._asdict()


def recognise(inputs: Sequence[Any], outputs: Sequence[Any],
              head_dim: int | None = None) -> DecoderLayout:
    """``inputs`` / ``outputs``: records with ``name``, ``dtype`` (numpy's name) and ``shape``
    (ints, or names/None for dynamic dimensions). ``head_dim``: the head size where the
    signature leaves it symbolic (the manifest's pipeline option)."""
    by_name = {v.name: v for v in inputs}
    out_by_name = {v.name: v for v in outputs}
    ids = by_name.get("input_ids")
    if ids is None or ids.dtype not in _IDS:
        raise LayoutError(f"no int64 input_ids input: expected {EXPECTED}")
    logits = out_by_name.get("logits")
    if logits is None or len(logits.shape) != 3 or logits.dtype not in _KV_TYPES:
        raise LayoutError(f"no float logits [batch, sequence, vocab] output: expected {EXPECTED}")
    pasts = [v for v in inputs if v.name.startswith(_PAST)]
    layers = len(pasts) // 2
    if not pasts or sorted(v.name for v in pasts) != sorted(
            f"{_PAST}{i}.{side}" for i in range(layers) for side in _SIDE):
        found = ", ".join(v.name for v in pasts[:4]) or "none"
        raise LayoutError(f"past_key_values inputs are not past_key_values.0..N-1.key/value "
                          f"(found: {found}): expected {EXPECTED}")
    missing = [f"{_PRESENT}{i}.{side}" for i in range(layers) for side in _SIDE
               if f"{_PRESENT}{i}.{side}" not in out_by_name]
    if missing:
        raise LayoutError(f"no {missing[0]} output for {_PAST}"
                          f"{missing[0][len(_PRESENT):]}: expected {EXPECTED}")
    extra = sorted(set(by_name) - {"input_ids", "attention_mask", "position_ids"}
                   - {v.name for v in pasts})
    if extra:
        raise LayoutError(f"inputs the generate pipeline cannot fill: {', '.join(extra)}: "
                          f"expected {EXPECTED}")
    first = by_name[f"{_PAST}0.key"]
    if len(first.shape) != 4 or not isinstance(first.shape[1], int):
        raise LayoutError(f"{first.name} has shape {list(first.shape)}, not [batch, kv_heads, "
                          f"past, head_dim] with a fixed number of heads: expected {EXPECTED}")
    size = _head_dim(first, head_dim)
    kv_dtype = first.dtype
    if kv_dtype not in _KV_TYPES or any(v.dtype != kv_dtype for v in pasts):
        raise LayoutError(f"the cache is {kv_dtype}: the generate pipeline runs float32 or "
                          "float16 caches of one type")
    vocab = logits.shape[2]
    return DecoderLayout(
        layers=layers, kv_heads=int(first.shape[1]), head_dim=size,
        kv_dtype=kv_dtype, ids_dtype=ids.dtype,
        vocab=vocab if isinstance(vocab, int) and vocab > 0 else None,
        position_ids="position_ids" in by_name, attention_mask="attention_mask" in by_name,
        logits_dtype=logits.dtype)


def _head_dim(first: Any, given: int | None) -> int:
    """The cache's head size: the signature's number, else ``given``."""
    fixed = first.shape[3]
    if given is not None and (isinstance(given, bool) or not isinstance(given, int)
                              or given < 1):
        raise LayoutError(f"the pipeline option head_dim is {given!r}, not a positive integer")
    if isinstance(fixed, int):
        if given is not None and given != fixed:
            raise LayoutError(f"the pipeline option head_dim is {given}, but {first.name} "
                              f"has head size {fixed}")
        return fixed
    if given is None:
        raise LayoutError(f"{first.name} has shape {list(first.shape)}: its head size "
                          f"({fixed!r}) is symbolic: {SYMBOLIC_HEAD_DIM}")
    return given
