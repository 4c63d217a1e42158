"""What the OpenAI (``handler.api.openai.embeddings``) and TEI (``handler.api.tei.embed``)
embedding routes share over the ``text-embedding`` pipeline: running many inputs in batches,
token-id inputs, and shortened (Matryoshka) vectors. Imported with those routes only."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from handler import json_codec
from handler.ort.tensor import Tensor, from_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.pipelines.text_embedding import TextEmbeddingPipeline


def embed(pipeline: TextEmbeddingPipeline, items: list[Any],
          feeds_of: Callable[[list[Any]], dict[str, Tensor]],
          encoding: str) -> tuple[list[Any], list[int]]:
    """Vectors (as the pipeline answers them in ``encoding``) and token counts, in input order,
    run in batches of the pipeline's ``max_batch``; sorted by length when there is more than
    one batch, so that each batch pads little."""
    step = pipeline.text.max_batch
    order = (list(range(len(items))) if len(items) <= step
             else sorted(range(len(items)), key=lambda i: len(items[i])))
    vectors: list[Any] = [None] * len(items)
    tokens = [0] * len(items)
    parameters = {"encoding_format": encoding}
    for start in range(0, len(order), step):
        chosen = order[start:start + step]
        feeds = feeds_of([items[i] for i in chosen])
        outputs = pipeline.run(feeds)
        if encoding == "float" and pipeline.embedding:  # the graph's float32 rows
            counts = [int(sum(row)) for row in pipeline.text.mask(feeds)]
            rows = _rows(outputs[pipeline.embedding])
        else:
            answer = pipeline.postprocess(outputs, parameters, feeds)
            counts, rows = answer["tokens"], answer["embeddings"]
        for i, vector, count in zip(chosen, rows, counts, strict=True):
            vectors[i], tokens[i] = vector, count
    return vectors, tokens


def _rows(value: Tensor) -> list[Any]:
    """Each vector of a [batch, width] float tensor, its floats as their shortest float32
    decimals (``json_codec.tensor_values``: one yyjson pass for the whole matrix)."""
    rows: list[Any] = json_codec.tensor_values(value)
    return rows


def id_feeds(pipeline: TextEmbeddingPipeline, rows: list[list[int]]) -> dict[str, Tensor]:
    """Token ids as given (the caller adds the model's special tokens), cut to ``max_length``
    and padded to the batch's longest row."""
    text = pipeline.text
    rows = [row[:text.max_length] for row in rows]
    width = max(map(len, rows))
    columns = {
        "input_ids": [t for row in rows for t in (*row, *[text.pad_id] * (width - len(row)))],
        "attention_mask": [m for row in rows for m in [1] * len(row) + [0] * (width - len(row))],
        "token_type_ids": [0] * (len(rows) * width)}
    by_name = pipeline.model.input_by_name
    return {name: from_values(by_name[name].element, (len(rows), width), values)
            for name, values in columns.items() if name in by_name}


def bad_ids(rows: list[Any], vocabulary: int) -> str | None:
    """Why ``rows`` are not lists of token ids of this vocabulary (None: they are)."""
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row or not all(is_id(t) for t in row):
            return f"input[{i}] is not a non-empty list of token ids"
        if not all(0 <= t < vocabulary for t in row):
            return (f"input[{i}] has a token id outside the model's vocabulary "
                    f"(0 to {vocabulary - 1})")
    return None


def is_id(value: Any) -> bool:
    return value.__class__ is int  # not bool, not float


def width_problem(dimensions: int, width: int, pipeline: TextEmbeddingPipeline) -> str | None:
    """Why ``dimensions`` cannot be served by a model embedding in ``width`` (None: it can)."""
    name = pipeline.model.name
    if dimensions > width:
        return f"dimensions is {dimensions}; {name!r} embeds in {width}"
    if dimensions < width and not pipeline.options.get("matryoshka"):
        return (f"{name!r} was not trained for shortened embeddings (Matryoshka): it embeds in "
                f"{width} dimensions only (a model that was is built with --pipeline-option "
                "matryoshka=true)")
    return None


def shorten(vector: list[float], dimensions: int, encoding: str = "float") -> Any:
    """The first ``dimensions`` values, renormalised to unit length (as OpenAI does), as
    float32 values or their base64 bytes."""
    kept = vector[:dimensions]
    norm = max(math.sqrt(math.fsum(v * v for v in kept)), 1e-12)
    packed = struct.pack(f"<{dimensions}f", *(v / norm for v in kept))
    if encoding == "base64":
        from binascii import b2a_base64  # base64 answers only

        return b2a_base64(packed, newline=False).decode("ascii")
    return list(struct.unpack(f"<{dimensions}f", packed))
