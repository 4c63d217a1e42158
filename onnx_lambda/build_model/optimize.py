"""Step 2: graph optimization for the CPU, done once at build time instead of at every cold start.

- Transformer fusions (``onnxruntime.transformers.optimizer``, Python pattern matching only, so
  the result holds standard + Microsoft contrib ops and loads in any onnxruntime version):
  LayerNorm / Gelu / Attention where the patterns match. Not SkipLayerNormalization, here or
  offline (``UNFUSED``): onnxruntime 1.32's CPU kernel for it measured 37.6 µs at 11×384 (120 µs
  at 34×384) against 4.7 µs (11.7 µs) for LayerNormalization and ~3 µs for the Add it replaces
  — 12 of them were ~8 % of MiniLM's int8 run (docs/explanation/minilm.md).
- Offline onnxruntime optimization at a chosen level, saved (as ``.onnx`` or ORT format) so the
  runtime can load it with online optimization off. Such a file is tied to this onnxruntime
  version (the manifest records it; the runtime falls back to the portable model otherwise).
  ``extended`` is the default: ``all`` adds layout transformations specific to the build
  machine's CPU, which a Lambda on another instance family may not share.
  An ``.onnx`` target keeps its initializers of ``EXTERNAL_MIN_BYTES`` or more in
  ``<target>.data`` beside it (``external_data``), which onnxruntime maps into memory instead of
  reading them into the parsed model and copying them out again: MiniLM's peak RSS at session
  creation 71.1 → 59.0 MB, the same warm run time. A model without such a tensor gets no file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import onnx
import onnxruntime as ort

from onnx_lambda.build_model import canonical

LEVELS = {
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
TRANSFORMER_INPUTS = {"input_ids", "attention_mask"}
# onnxruntime fusions left out offline: slower on the CPU than the ops they replace (above).
UNFUSED = ["SkipLayerNormFusion"]
EXTERNAL_MIN_BYTES = 65536  # smaller ones stay inline: a mapping of its own would cost more


def looks_like_transformer(model: onnx.ModelProto) -> bool:
    """BERT-like encoders take ``input_ids`` and ``attention_mask``."""
    return {i.name for i in model.graph.input} >= TRANSFORMER_INPUTS


def fuse_transformer(source: Path, target: Path, num_heads: int = 0,
                     hidden_size: int = 0) -> dict[str, int]:
    """Apply the BERT fusions; returns the count of each fused operator that was created.
    ``num_heads``/``hidden_size``: 0 = read them from the graph (possible only where its
    reshapes have constant shapes; a dynamo export computes them, so Attention needs both)."""
    # The transformer optimizer is a large module tree, only needed for transformer models.
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    # Its fusion passes log every pattern they try at INFO/WARNING: keep the build output clean.
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    model = onnx.load(str(source))
    canonical.for_attention_fusion(model)
    fusions = FusionOptions("bert")
    fusions.enable_skip_layer_norm = False  # slower than Add + LayerNormalization (UNFUSED)
    optimized = optimize_model(model, model_type="bert", num_heads=num_heads,
                               hidden_size=hidden_size, opt_level=0,
                               optimization_options=fusions)
    optimized.save_model_to_file(str(target))
    stats = optimized.get_fused_operator_statistics() or {}
    return {op: count for op, count in stats.items() if count}


def external_data(target: Path) -> Path:
    """Where an optimized ``.onnx`` file's large initializers go."""
    return target.with_name(f"{target.name}.data")


def optimize_offline(source: Path, target: Path, level: str) -> None:
    """Save the graph as onnxruntime optimizes it at ``level``; a ``.ort`` target is saved in
    ORT format (smaller, faster to load, needs no protobuf parsing), an ``.onnx`` one with its
    large initializers in ``external_data(target)``."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = LEVELS[level]
    options.optimized_model_filepath = str(target)
    if target.suffix == ".ort":
        options.add_session_config_entry("session.save_model_format", "ORT")
    else:
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name",
            external_data(target).name)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes",
            str(EXTERNAL_MIN_BYTES))
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"],
                         disabled_optimizers=UNFUSED)
