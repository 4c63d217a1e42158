"""The model artifact's manifest, ``model.json``: the runtime's single source of truth about it.

Written by ``onnx-lambda build-model`` (``onnx_lambda.build_model``), read here at init. A model
folder holds the files named in ``files`` (each with its sha256) and this manifest.

``model`` is the preferred file (an offline-optimized ``.onnx`` or an ``.ort``), made for the
onnxruntime version in ``onnxruntime``; ``portable`` is a plain ``.onnx`` any version can load. A
manifest made for another onnxruntime version makes the runtime fall back to ``portable``.

``example`` is the ``inputs`` of a valid ``/predict`` request (for ``pipeline``), inline;
``example_file`` names an ``.npz`` in the folder with one array per model input, for examples too
large to inline or pipelines whose requests are not tensors. Either is the init's warm-up.

``FORMAT_VERSION`` rule: a new *optional* field (an older runtime ignores it and still serves the
model correctly, as with ``example_file``) keeps the version; a change an older runtime would
misread (a renamed or re-typed field, a new required one) bumps it, and a runtime refuses a
manifest newer than its own version.
"""

from __future__ import annotations

import json
import os

from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FILENAME = "model.json"
DEFAULT_TOKENIZER = "tokenizer.json"  # a text model's ``tokenizer`` option when none is named
MODEL_SUFFIXES = (".onnx", ".ort")  # what a model file is named (a bare one, or in a folder)
FORMAT_VERSION = 1
# The pipeline option that runs each item of a batch alone (``handler.pipelines.text_inputs``),
# and the pipelines that take it: build-model sets it where the quantization's activation scale
# spans the batch (dynamic INT8), so that an item's answer never depends on its neighbours.
ITEM_BY_ITEM = "item_by_item"
RUNS_ALONE = ("text-embedding", "rerank")


class TensorInfo(NamedTuple):
    """One input or output: numpy dtype name (``float32``, ``int64``, ``str`` …) and shape, where
    a dynamic dimension is ``None`` or its symbolic name."""

    name: str
    dtype: str
    shape: tuple[int | str | None, ...]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorInfo:
        return cls(name=data["name"], dtype=data["dtype"], shape=tuple(data["shape"]))


# NamedTuples, not dataclasses: ``dataclasses`` (with inspect, ast, tokenize) cost ~14 ms of
# every cold start; ``_replace`` is ``dataclasses.replace``. The dict defaults are never mutated.
class Manifest(NamedTuple):
    name: str
    model: str
    portable: str
    onnxruntime: str
    optimization: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    files: dict[str, str]
    pipeline: str = "tensor"
    pipeline_options: dict[str, Any] = {}  # noqa: RUF012
    # Pipeline math appended to the graph by build-model: role → output name (classifier:
    # probabilities, scores, indices; text-embedding: embedding). Empty: the runtime computes it.
    graph_outputs: dict[str, str] = {}  # noqa: RUF012
    labels: tuple[str, ...] | None = None
    example: Any = None
    metadata: dict[str, Any] = {}  # noqa: RUF012
    format_version: int = FORMAT_VERSION
    example_file: str | None = None
    # build-model's GPU verdict: {"suitable": bool, "reasons": [...]}; {} = not assessed
    gpu: dict[str, Any] = {}  # noqa: RUF012

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        version = data.get("format_version", FORMAT_VERSION)
        if version > FORMAT_VERSION:
            raise ValueError(f"manifest format {version} is newer than this runtime's "
                             f"({FORMAT_VERSION}); upgrade onnx-lambda")
        labels = data.get("labels")
        return cls(
            name=data["name"],
            model=data["model"],
            portable=data.get("portable", data["model"]),
            onnxruntime=data.get("onnxruntime", ""),
            optimization=data.get("optimization", "none"),
            inputs=tuple(TensorInfo.from_dict(t) for t in data.get("inputs", ())),
            outputs=tuple(TensorInfo.from_dict(t) for t in data.get("outputs", ())),
            files=dict(data.get("files", {})),
            pipeline=data.get("pipeline", "tensor"),
            pipeline_options=dict(data.get("pipeline_options", {})),
            graph_outputs=dict(data.get("graph_outputs", {})),
            labels=tuple(labels) if labels is not None else None,
            example=data.get("example"),
            metadata=dict(data.get("metadata", {})),
            format_version=version,
            example_file=data.get("example_file"),
            gpu=dict(data.get("gpu") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        data = self._asdict()
        data["inputs"] = [t._asdict() for t in self.inputs]
        data["outputs"] = [t._asdict() for t in self.outputs]
        if data["example_file"] is None:  # absent, as older runtimes and manifests have it
            del data["example_file"]
        if not data["gpu"]:
            del data["gpu"]
        return data

    def takes_text(self) -> bool:
        return takes_text(self.pipeline, self.pipeline_options, self.files)

    # Folders as str or os.PathLike: pathlib stays off the cold path (see handler.artifact).
    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> Manifest:
        with open(os.path.join(folder, FILENAME), encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))

    def dump(self, folder: str | os.PathLike[str]) -> str:
        path = os.path.join(folder, FILENAME)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(self.to_dict(), indent=2) + "\n")
        return path


def tokenizer_file(options: Mapping[str, Any]) -> str:
    """A text model's tokenizer file: its ``tokenizer`` pipeline option, else the default."""
    return str(options.get("tokenizer", DEFAULT_TOKENIZER))


def takes_text(pipeline: str, options: Mapping[str, Any], files: Mapping[str, str]) -> bool:
    """Whether a model answers sentences: the text-embedding, rerank and generate pipelines, or a
    classifier that ships its tokenizer (``handler.pipelines.text_inputs``)."""
    return pipeline in ("text-embedding", "rerank", "generate") or (
        pipeline == "classifier" and tokenizer_file(options) in files)
