"""One sequence's forward passes with its key/value cache kept inside ONNX Runtime.

Each ``forward`` feeds the new token ids, the attention mask over every position so far and the
new positions, plus the previous step's ``present.*`` ``OrtValue``s as ``past_key_values.*``
(handles re-fed, never copied to Python); the prefill's past is an empty tensor of length 0.
The mask and the positions are views into two arrays made once per model (ones, and
0..context-1): a step creates three small ``OrtValue`` headers and copies nothing.

Only the last position's logits are read, through a pointer into ORT's output (``row``), or
not at all: the greedy choice runs in ORT on the logits value (``handler.generation.pick``).
"""

from __future__ import annotations

import struct
from ctypes import addressof, c_float, c_int32, c_int64, string_at

from handler.generation.layout import DecoderLayout
from handler.ort.values import ValueRun

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ID_TYPES = {"int64": c_int64, "int32": c_int32}


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


class KVCache:
    """The state of one sequence (batch 1); ``close`` releases every ORT value it holds."""

    def __init__(self, runner: ValueRun, layout: DecoderLayout, context_length: int) -> None:
        self.runner, self.layout = runner, layout
        self.context_length = context_length
        self.length = 0  # positions in the cache
        self._id_type: Any = _ID_TYPES[layout.ids_dtype]
        self._id_size = 8 if layout.ids_dtype == "int64" else 4
        self._ones, self._positions = _arrays(layout.ids_dtype, context_length)
        empty = (1, layout.kv_heads, 0, layout.head_dim)
        self._past: list[int] = [runner.tensor(None, empty, layout.kv_dtype)
                                 for _ in range(2 * layout.layers)]
        self.logits = 0  # the last forward's logits OrtValue (owned here)
        self.vocab = layout.vocab or 0

    def forward(self, ids: list[int]) -> int:
        """Run ``ids`` (new tokens) through the model; returns the logits ``OrtValue``
        [1, len(ids), vocab], valid until the next ``forward`` or ``close``."""
        runner, count = self.runner, len(ids)
        total = self.length + count
        if total > self.context_length:
            raise ValueError(f"{total} positions exceed the context of {self.context_length}")
        tokens = (self._id_type * count)(*ids)  # alive until the run returns
        ids_type = self.layout.ids_dtype
        feeds = [runner.tensor(addressof(tokens), (1, count), ids_type)]
        try:
            if self.layout.attention_mask:
                feeds.append(runner.tensor(addressof(self._ones), (1, total), ids_type))
            if self.layout.position_ids:
                feeds.append(runner.tensor(addressof(self._positions) + self.length
                                           * self._id_size, (1, count), ids_type))
            outputs = runner.run(feeds + self._past)
        finally:
            for value in feeds:
                runner.release(value)
        for value in self._past:
            runner.release(value)
        runner.release(self.logits)
        self.logits, self._past = outputs[0], outputs[1:]
        self.length = total
        if not self.vocab:  # a symbolic vocabulary: read once from the first output
            self.vocab = runner.shape(self.logits)[2]
        return self.logits

    def row(self) -> list[float]:
        """The last position's logits as Python floats: one row read through a pointer into
        ORT's output, the only copy."""
        float32 = self.layout.logits_dtype == "float32"
        rows = self.runner.shape(self.logits)[1]  # 1 where build-model projects the last only
        address = (self.runner.data(self.logits)
                   + (rows - 1) * self.vocab * (4 if float32 else 2))
        if float32:
            return (c_float * self.vocab).from_address(address)[:]
        # (memoryview has no half-precision cast; struct has)
        return list(struct.unpack(f"<{self.vocab}e", string_at(address, 2 * self.vocab)))

    def close(self) -> None:
        runner = self.runner
        for value in self._past:
            runner.release(value)
        runner.release(self.logits)
        self._past, self.logits = [], 0
