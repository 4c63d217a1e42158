"""One sequence's forward passes with its key/value cache kept inside ONNX Runtime.

Each ``forward`` feeds the new token ids, the attention mask over every position so far and the
new positions, plus the cache as ``past_key_values.*``. The mask and the positions are views into
two arrays made once per model (ones, and 0..context-1): a step copies no ids.

Two ways to hold the cache:

- growing (any decoder): the previous step's ``present.*`` ``OrtValue``s are re-fed as the next
  ``past_key_values.*`` (handles, never copied to Python); the prefill's past has length 0. The
  graph concatenates past and new positions into a fresh present every step: on SmolLM2 at
  300 positions that is 14 MB written a token.
- shared (``capacity`` > 0; a ``GroupQueryAttention`` graph, onnxruntime-genai's
  ``past_present_share_buffer``): one buffer of ``capacity`` positions per layer and side is both
  the past input and the preallocated present output (doubled, the positions copied, when a
  sequence outgrows it). The attention kernel sees the two are the
  same memory and writes the new positions in place, reading the valid length from the mask
  (``seqlens_k``); nothing is concatenated, and a step's cache traffic is the new token's.
  Positions past ``length`` are stale and never read, so ``truncate`` is free (speculative
  decoding's rejected drafts).

``snapshot`` copies the first positions out as a compact block (the prefix cache keeps it) and
``restore`` copies one back before the first ``forward``. Only the last position's logits are
read, through a pointer into ORT's output (``row``), or not at all: the greedy choice runs in ORT
on the logits value (``handler.generation.pick``).
"""

from __future__ import annotations

import struct
from ctypes import addressof, c_char, c_float, c_int32, c_int64, memmove, string_at

from handler.generation.layout import DecoderLayout
from handler.ort.values import ValueRun

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ID_TYPES = {"int64": c_int64, "int32": c_int32}
_KV_SIZES = {"float32": 4, "float16": 2}


_ARRAYS: dict[tuple[str, int], tuple[Any, Any]] = {}


def _arrays(dtype: str, length: int) -> tuple[Any, Any]:
    """``length`` ones and 0..length-1 as C arrays, made once per model (never written: every
    sequence's mask and positions are views of them)."""
    found = _ARRAYS.get((dtype, length))
    if found is None:
        kind = _ID_TYPES[dtype]
        found = (kind * length)(*([1] * length)), (kind * length)(*range(length))
        if len(_ARRAYS) < 8:
            _ARRAYS[dtype, length] = found
    return found


def position_bytes(layout: DecoderLayout) -> int:
    """The cache's bytes for one position, every layer, key and value."""
    return 2 * layout.layers * layout.kv_heads * layout.head_dim * _KV_SIZES[layout.kv_dtype]


def copy_heads(dst: int, dst_positions: int, src: int, src_positions: int, positions: int,
               layout: DecoderLayout, tensors: int = 0) -> None:
    """Copy the first ``positions`` of every [heads, positions, head_dim] tensor (``tensors``
    of them, 2 × layers by default, one after another) from blocks of ``src_positions`` to
    blocks of ``dst_positions``."""
    row = layout.head_dim * _KV_SIZES[layout.kv_dtype]
    count, heads = positions * row, (tensors or 2 * layout.layers) * layout.kv_heads
    if dst_positions == src_positions == positions:  # compact both sides: one copy
        memmove(dst, src, count * heads)
        return
    src_step, dst_step = src_positions * row, dst_positions * row
    for _ in range(heads):
        memmove(dst, src, count)
        dst += dst_step
        src += src_step


class KVCache:
    """The state of one sequence (batch 1); ``close`` releases every ORT value it holds.
    ``capacity``: positions of a shared past/present buffer (0: a growing cache)."""

    def __init__(self, runner: ValueRun, layout: DecoderLayout, context_length: int,
                 capacity: int = 0, buffer: Any = None) -> None:
        self.runner, self.layout = runner, layout
        self.context_length = context_length
        self.length = 0  # positions in the cache
        self.tokens: list[int] = []  # the ids those positions hold
        self._id_type: Any = _ID_TYPES[layout.ids_dtype]
        self._id_size = 8 if layout.ids_dtype == "int64" else 4
        self._ones, self._positions = _arrays(layout.ids_dtype, context_length)
        self.capacity = min(capacity, context_length)
        self.buffer: Any = None
        self._held: Any = None  # memory under restored growing-cache values
        if self.capacity:
            size = self.capacity * position_bytes(layout)
            # (the caller may hand back an earlier sequence's buffer: zeroing 25 MB costs ms)
            self.buffer = buffer if buffer is not None and len(buffer) >= size else (
                c_char * size)()
            self._past = self._tensors(addressof(self.buffer), self.capacity)
        else:
            self._past = self._tensors(None, 0)
        self.logits = 0  # the last forward's logits OrtValue (owned here)
        self.vocab = layout.vocab or 0

    def _tensors(self, address: int | None, positions: int) -> list[int]:
        """2 × layers tensor values of ``positions`` each, laid one after another at
        ``address`` (None: empty)."""
        layout = self.layout
        shape = (1, layout.kv_heads, positions, layout.head_dim)
        step = positions * position_bytes(layout) // (2 * layout.layers)
        return [self.runner.tensor(None if address is None else address + i * step, shape,
                                   layout.kv_dtype) for i in range(2 * layout.layers)]

    def forward(self, ids: list[int]) -> int:
        """Run ``ids`` (new tokens) through the model; returns the logits ``OrtValue``
        [1, len(ids) or 1, vocab], valid until the next ``forward`` or ``close``."""
        runner, count = self.runner, len(ids)
        total = self.length + count
        if total > self.context_length:
            raise ValueError(f"{total} positions exceed the context of {self.context_length}")
        if self.capacity and total > self.capacity:
            self._grow(total)
        tokens = (self._id_type * count)(*ids)  # alive until the run returns
        ids_type = self.layout.ids_dtype
        feeds = [runner.tensor(addressof(tokens), (1, count), ids_type)]
        try:
            if self.layout.attention_mask:
                feeds.append(runner.tensor(addressof(self._ones), (1, total), ids_type))
            if self.layout.position_ids:
                feeds.append(runner.tensor(addressof(self._positions) + self.length
                                           * self._id_size, (1, count), ids_type))
            shared = [0, *self._past] if self.capacity else ()
            outputs = runner.run(feeds + self._past, shared)
        finally:
            for value in feeds:
                runner.release(value)
        runner.release(self.logits)
        self.logits = outputs[0]
        if not self.capacity:
            for value in self._past:
                runner.release(value)
            self._past, self._held = outputs[1:], None
        self.length = total
        self.tokens += ids
        if not self.vocab:  # a symbolic vocabulary: read once from the first output
            self.vocab = runner.shape(self.logits)[2]
        return self.logits

    def _grow(self, needed: int) -> None:
        """A shared buffer twice as long (at least ``needed``, at most the context), the
        positions so far copied over: a request asks for up to the context's end, and most
        stop far before it."""
        capacity = min(self.context_length, max(needed, 2 * self.capacity))
        buffer = (c_char * (capacity * position_bytes(self.layout)))()
        copy_heads(addressof(buffer), capacity, addressof(self.buffer), self.capacity,
                   self.length, self.layout)
        for value in self._past:
            self.runner.release(value)
        self.buffer, self.capacity = buffer, capacity
        self._past = self._tensors(addressof(buffer), capacity)

    def truncate(self, length: int) -> None:
        """Forget the positions from ``length`` on (a shared cache only: its stale positions
        are overwritten by the next ``forward``)."""
        if not self.capacity:
            raise ValueError("a growing cache cannot be truncated")
        self.length = min(self.length, length)
        del self.tokens[self.length:]

    def snapshot(self, positions: int) -> Any:
        """The first ``positions`` (≤ ``length``) as one compact block
        ([heads, positions, head_dim] per layer and side, one after another)."""
        block = (c_char * (positions * position_bytes(self.layout)))()
        if self.capacity:
            copy_heads(addressof(block), positions, addressof(self.buffer), self.capacity,
                       positions, self.layout)
        else:  # each present value is its own compact [1, heads, length, head_dim]
            size = len(block) // len(self._past)
            for i, value in enumerate(self._past):
                copy_heads(addressof(block) + i * size, positions, self.runner.data(value),
                           self.length, positions, self.layout, tensors=1)
        return block

    def restore(self, block: Any, block_positions: int, positions: int,
                tokens: list[int]) -> None:
        """Start from the first ``positions`` of a ``snapshot`` of ``block_positions``
        (``tokens``: the ids they hold); before the first ``forward`` only."""
        if self.length:
            raise ValueError("restore into a cache already in use")
        if self.capacity:
            copy_heads(addressof(self.buffer), self.capacity, addressof(block), block_positions,
                       positions, self.layout)
        else:
            held = (c_char * (positions * position_bytes(self.layout)))()
            copy_heads(addressof(held), positions, addressof(block), block_positions,
                       positions, self.layout)
            for value in self._past:
                self.runner.release(value)
            self._past, self._held = self._tensors(addressof(held), positions), held
        self.length = positions
        self.tokens = list(tokens[:positions])

    def row(self, index: int = -1) -> list[float]:
        """A position's logits (the last by default) as Python floats: one row read through a
        pointer into ORT's output, the only copy."""
        float32 = self.layout.logits_dtype == "float32"
        rows = self.runner.shape(self.logits)[1]  # 1 where build-model projects the last only
        address = (self.runner.data(self.logits)
                   + (index % rows) * self.vocab * (4 if float32 else 2))
        if float32:
            return (c_float * self.vocab).from_address(address)[:]
        # (memoryview has no half-precision cast; struct has)
        return list(struct.unpack(f"<{self.vocab}e", string_at(address, 2 * self.vocab)))

    def close(self) -> None:
        runner = self.runner
        for value in self._past:
            runner.release(value)
        runner.release(self.logits)
        self._past, self.logits, self._held = [], 0, None

