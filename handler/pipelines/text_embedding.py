"""Text-embedding pipeline: sentences → tokenizer → one ``session.run`` → pooled vectors.

Request ``{"inputs": ["first sentence", "second"]}`` (or a single string). Response::

    {"embeddings": [[0.01, ...], [...]], "dimensions": 384, "tokens": [5, 3]}

``tokens`` counts each sentence's tokens after truncation (special tokens included). The batch is
padded to its longest sentence (not to ``max_length``): short requests stay cheap.

``"parameters": {"encoding_format": "base64"}`` (the name and value OpenAI's embeddings API
uses) answers each vector as the base64 text of its little-endian float32 bytes instead of
decimals: exact, and about a quarter of the bytes of float64 decimals (0.44x our shortest
float32 text: 4 bytes as 5.3 characters against ~12 for a decimal). ``"float"`` is the default.

Options (``pipeline_options``): ``tokenizer`` — file beside the model (``tokenizer.json``);
``vocabulary`` — for a WordPiece tokenizer split by build-model, its ``vocab.txt``
(``tokenizer_files``);
``max_length`` — truncation length in tokens (256); ``max_batch`` — sentences per request (64);
``output`` — the token-embeddings output (default: the first); ``pooling`` — ``mean`` (masked
mean over tokens) or ``cls`` (first token); ``normalize`` — L2-normalise (true).
A model whose output is already pooled (rank 2) is used as is.

The math is in the graph: ``onnx-lambda build-model`` appends the pooling and the normalisation
(output ``sentence_embedding``, named in the manifest's ``graph_outputs``), so ``postprocess``
only reads ``.encoded_json()`` (the vectors with their shortest float32 text) and
``.shape``. A model without it (a bare ``.onnx``, an artifact built before) gets the same math
in Python, over lists.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Mapping, Sequence

from handler.errors import InvalidInputError, ModelLoadError
from handler.model import Model
from handler.ort.tensor import Tensor, from_values
from handler.pipelines.base import Pipeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUIREMENTS_HINT = "pip install -r layers/requirements-text.txt (the tokenizers package)"
ENCODINGS = ("float", "base64")  # parameters.encoding_format, as OpenAI's embeddings API names it
PREDATES = ("the model has no pooling in its graph (a bare model, or built before build-model "
            "appended it): pooling and normalisation run in Python; rebuild it with "
            "onnx-lambda build-model")


class TextEmbeddingPipeline(Pipeline):
    name = "text-embedding"

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        # tokenizers (a Rust extension, ~10 MB) is needed by text models only: importing it here
        # keeps it off the cold path, and out of the image, of every other model.
        from handler.pipelines import tokenizer_files

        path = model.artifact.file(self.options.get("tokenizer", tokenizer_files.DEFAULT_FILE))
        vocabulary = self.options.get("vocabulary")
        try:
            self.tokenizer = tokenizer_files.load(
                path, vocabulary and model.artifact.file(vocabulary))
        except ImportError:
            raise ModelLoadError(f"the text-embedding pipeline needs tokenizers: "
                                 f"{REQUIREMENTS_HINT}") from None
        except Exception as exc:  # tokenizers raises a bare Exception for missing/corrupt files
            raise ModelLoadError(f"text-embedding pipeline: cannot load {path}"
                                 f"{f' with {vocabulary}' if vocabulary else ''}: {exc}") from exc
        self.max_length = int(self.options.get("max_length", 256))
        self.max_batch = int(self.options.get("max_batch", 64))
        self.normalize = bool(self.options.get("normalize", True))
        self.pooling = self.options.get("pooling", "mean")
        if self.pooling not in ("mean", "cls"):
            raise ModelLoadError(f"text-embedding pipeline: pooling {self.pooling!r} is not "
                                 "'mean' or 'cls'")
        self.tokenizer.enable_truncation(self.max_length)
        padding = self.tokenizer.padding or {}
        self.pad_id = padding.get("pad_id", 0)
        self.tokenizer.enable_padding(pad_id=self.pad_id,
                                      pad_token=padding.get("pad_token", "[PAD]"))
        if "input_ids" not in model.input_by_name:
            raise ModelLoadError("text-embedding pipeline: the model has no 'input_ids' input "
                                 f"({', '.join(s.describe() for s in model.inputs)})")
        names = {s.name for s in model.outputs}
        manifest = model.artifact.manifest
        self.embedding = manifest.graph_outputs.get("embedding") if manifest else None
        if self.embedding not in names:
            self.embedding, self.warning = None, PREDATES
        self.output = self.options.get("output") or model.outputs[0].name
        if self.output not in names:
            raise ModelLoadError(f"text-embedding pipeline: no output {self.output!r}")

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        sentences = [inputs] if isinstance(inputs, str) else inputs
        if (not isinstance(sentences, list) or not sentences
                or not all(isinstance(s, str) for s in sentences)):
            raise InvalidInputError('"inputs" must be a string or a non-empty list of strings')
        if len(sentences) > self.max_batch:
            raise InvalidInputError(f"{len(sentences)} sentences: at most {self.max_batch} "
                                    "per request")
        encoding = parameters.get("encoding_format", "float")
        if encoding not in ENCODINGS:  # checked before the run: a bad request costs no inference
            raise InvalidInputError(f"parameters.encoding_format must be 'float' or 'base64', "
                                    f"got {encoding!r}")
        return _feeds(self.tokenizer.encode_batch(sentences), self.model)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Any]) -> Any:
        # The model's own mask input when it has one, else padding told apart by its id.
        if "attention_mask" in feeds:
            mask = feeds["attention_mask"].tolist()
        else:
            mask = [[int(t != self.pad_id) for t in row] for row in feeds["input_ids"].tolist()]
        value = outputs[self.embedding or self.output]
        dimensions = int(value.shape[-1])
        base64 = parameters.get("encoding_format") == "base64"
        if self.embedding:  # the graph's float32 vectors: their bytes, or shortest decimals
            vectors: Any = (_base64_rows(value, dimensions) if base64
                            else value.encoded_json())
        else:  # Python's own math, as is
            vectors = value.tolist()
            if len(value.shape) == 3:
                vectors = ([mean_pool(h, m) for h, m in zip(vectors, mask, strict=True)]
                           if self.pooling == "mean" else [h[0] for h in vectors])
            if self.normalize:
                vectors = [l2_normalize(v) for v in vectors]
            if base64:
                vectors = [_base64(struct.pack(f"<{dimensions}f", *v)) for v in vectors]
        return {"embeddings": vectors, "dimensions": dimensions,
                "tokens": [int(sum(row)) for row in mask]}

    def example(self) -> Any:
        return ["warm-up sentence"]


def _base64(raw: Any) -> str:
    from binascii import b2a_base64  # base64 answers only: its extension stays off the cold path

    return b2a_base64(raw, newline=False).decode("ascii")


def _base64_rows(value: Tensor, dimensions: int) -> list[str]:
    """Each pooled vector's little-endian float32 bytes as base64 (a float16 graph's widened)."""
    if value.dtype == "float32" and sys.byteorder == "little":
        data, step = memoryview(value.data), 4 * dimensions
        return [_base64(data[start:start + step]) for start in range(0, len(data), step)]
    flat = value.flat()
    return [_base64(struct.pack(f"<{dimensions}f", *flat[start:start + dimensions]))
            for start in range(0, len(flat), dimensions)]


def _feeds(encodings: list[Any], model: Model) -> dict[str, Tensor]:
    """The model's token inputs, batch-padded (every encoding has the batch's length)."""
    columns = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    shape = (len(encodings), len(encodings[0].ids))
    return {name: from_values(spec.element, shape,
                              [v for e in encodings for v in getattr(e, attribute)])
            for name, attribute in columns.items()
            if (spec := model.input_by_name.get(name)) is not None}


def mean_pool(tokens: Sequence[Sequence[float]], mask: Sequence[float]) -> list[float]:
    """Mean of the token vectors where ``mask`` is 1 (padding excluded)."""
    kept = [t for t, m in zip(tokens, mask, strict=True) if m]
    if not kept:
        return [0.0] * len(tokens[0])
    count = float(sum(mask))
    return [math.fsum(column) / count for column in zip(*kept, strict=True)]


def l2_normalize(vector: Sequence[float]) -> list[float]:
    norm = max(math.sqrt(math.fsum(v * v for v in vector)), 1e-12)
    return [v / norm for v in vector]


PIPELINE = TextEmbeddingPipeline
