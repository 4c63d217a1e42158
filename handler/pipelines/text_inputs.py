"""Sentences → a text model's token inputs, for the pipelines that take text: ``text-embedding``,
and ``classifier`` when its artifact ships a tokenizer (a sentiment or intent model).

The tokenizer is ``tokenizer.json`` beside the model (option ``tokenizer``; ``vocabulary`` for a
WordPiece tokenizer that build-model split in two: ``tokenizer_files``); sentences are truncated
to ``max_length`` tokens (256) and the batch, at most ``max_batch`` sentences (64), is padded to
its longest one. The model's ``input_ids``, ``attention_mask`` and ``token_type_ids`` inputs,
those it has, are filled from the encodings.

``item_by_item`` (option, false; build-model sets it for a quantization whose activation scale
spans the batch, dynamic INT8: ``handler.manifest.RUNS_ALONE`` names the pipelines that take it):
``run`` gives each item of a batch a session run of its own, cut to its own tokens, so that its
answer is the one it gets alone, whatever its neighbours; the answers are stacked back into the
batch's shape (a sequence axis padded with zeros where the item had padding).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from handler.errors import InferenceError, InvalidInputError, ModelLoadError
from handler.manifest import ITEM_BY_ITEM, tokenizer_file
from handler.model import Model
from handler.ort.tensor import Tensor, as_tensor, from_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUIREMENTS_HINT = "pip install -r layers/requirements-text.txt (the tokenizers package)"
COLUMNS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


class TextInputs:
    def __init__(self, model: Model, options: Mapping[str, Any], pipeline: str) -> None:
        # tokenizers (a Rust extension, ~10 MB) is needed by text models only: importing it here
        # keeps it off the cold path, and out of the image, of every other model.
        from handler.pipelines import tokenizer_files

        self.model = model
        path = model.artifact.file(tokenizer_file(options))
        vocabulary = options.get("vocabulary")
        try:
            self.tokenizer = tokenizer_files.load(
                path, vocabulary and model.artifact.file(vocabulary))
        except ImportError:
            raise ModelLoadError(f"the {pipeline} pipeline needs tokenizers for text: "
                                 f"{REQUIREMENTS_HINT}") from None
        except Exception as exc:  # tokenizers raises a bare Exception for missing/corrupt files
            raise ModelLoadError(f"{pipeline} pipeline: cannot load {path}"
                                 f"{f' with {vocabulary}' if vocabulary else ''}: {exc}") from exc
        self.max_length = int(options.get("max_length", 256))
        self.max_batch = int(options.get("max_batch", 64))
        self.tokenizer.enable_truncation(self.max_length)
        padding = self.tokenizer.padding or {}
        self.pad_id = padding.get("pad_id", 0)
        self.tokenizer.enable_padding(pad_id=self.pad_id,
                                      pad_token=padding.get("pad_token", "[PAD]"))
        self.alone = options.get(ITEM_BY_ITEM, False)
        if self.alone.__class__ is not bool:
            raise ModelLoadError(f"{pipeline} pipeline: the {ITEM_BY_ITEM} option must be true or "
                                 f"false, got {self.alone!r}")
        if "input_ids" not in model.input_by_name:
            raise ModelLoadError(f"{pipeline} pipeline: the model has no 'input_ids' input "
                                 f"({', '.join(s.describe() for s in model.inputs)})")

    def feeds(self, inputs: Any) -> dict[str, Tensor]:
        """``inputs`` (a string or a non-empty list of strings) → the model's token inputs."""
        sentences = [inputs] if isinstance(inputs, str) else inputs
        if (not isinstance(sentences, list) or not sentences
                or not all(isinstance(s, str) for s in sentences)):
            raise InvalidInputError('"inputs" must be a string or a non-empty list of strings')
        if len(sentences) > self.max_batch:
            raise InvalidInputError(f"{len(sentences)} sentences: at most {self.max_batch} "
                                    "per request")
        return self.feeds_of(self.tokenizer.encode_batch(sentences))

    def feeds_of(self, encodings: list[Any]) -> dict[str, Tensor]:
        """The tokenizer's (padded) encodings → the model's token inputs."""
        shape = (len(encodings), len(encodings[0].ids))  # every one padded to the batch's length
        return {name: from_values(spec.element, shape,
                                  [v for e in encodings for v in getattr(e, attribute)])
                for name, attribute in COLUMNS.items()
                if (spec := self.model.input_by_name.get(name)) is not None}

    def mask(self, feeds: Mapping[str, Any]) -> list[list[int]]:
        """Which tokens are real: the model's own mask input when it has one, else the ids that
        are not the padding id."""
        if "attention_mask" in feeds:
            given: list[list[int]] = feeds["attention_mask"].tolist()
            return given
        return [[int(t != self.pad_id) for t in row] for row in feeds["input_ids"].tolist()]

    def run(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """The session's outputs for the batch ``feeds``: one run, or one per item
        (``item_by_item``)."""
        if self.alone and feeds["input_ids"].shape[0] > 1:  # (one item has no padding)
            return run_alone(self.model, feeds, self.mask(feeds))
        return self.model.run(dict(feeds))


def run_alone(model: Model, feeds: Mapping[str, Any], mask: list[list[int]]) -> dict[str, Any]:
    """Each item of a right-padded batch run by itself on its own ``mask``'d tokens, the
    outputs stacked back in batch order."""
    if len(mask) == 1 and all(mask[0]):  # one item, no padding: the batch is the item
        return model.run(dict(feeds))
    answers = [model.run({name: _item(as_tensor(value), row, max(1, sum(kept)))
                          for name, value in feeds.items()})
               for row, kept in enumerate(mask)]
    return {name: _stack([answer[name] for answer in answers], len(mask[0]))
            for name in answers[0]}


def _item(tensor: Tensor, row: int, length: int) -> Tensor:
    """Row ``row`` of a [batch, width] token input, its first ``length`` tokens."""
    width = tensor.shape[1]
    step = tensor.itemsize
    start = row * width * step
    data = memoryview(tensor.data).cast("B")[start:start + length * step].tobytes()
    return Tensor(tensor.dtype, (1, length), data)


def _stack(parts: list[Any], width: int) -> Tensor:
    """Batch-1 outputs as one batch; an axis 1 that followed each item's length (token
    vectors) padded with zeros to the batch's ``width``."""
    if not all(isinstance(part, Tensor) and part.shape[:1] == (1,) and part.dtype != "string"
               for part in parts):
        raise InferenceError(f"{ITEM_BY_ITEM}: the model answers an output that is not a "
                             "numeric tensor with a batch axis; build it without it")
    first = parts[0]
    if all(part.shape == first.shape for part in parts):
        return Tensor(first.dtype, (len(parts), *first.shape[1:]),
                      b"".join(bytes(part.data) for part in parts))
    if first.ndim < 2 or any(part.shape[2:] != first.shape[2:] for part in parts):
        raise InferenceError(f"{ITEM_BY_ITEM}: the items' outputs differ in shape beyond their "
                             "length; build it without it")
    position = first.itemsize * math.prod(first.shape[2:])  # bytes per token along axis 1
    return Tensor(first.dtype, (len(parts), width, *first.shape[2:]), b"".join(
        bytes(part.data) + bytes((width - part.shape[1]) * position) for part in parts))
