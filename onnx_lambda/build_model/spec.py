"""What to build (``ModelSpec``: the model and everything the runtime needs beside it) and how
(``BuildOptions``: the command line's choices)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from onnx_lambda.build_model.example import Given
from onnx_lambda.build_model.gate import Comparable, Feeds, Rows, Thresholds, comparable_outputs
from onnx_lambda.build_model.quantize import QuantizeSettings


@dataclass
class ModelSpec:
    source: Path  # the ONNX file to build from
    name: str
    pipeline: str = "tensor"
    pipeline_options: dict[str, Any] = field(default_factory=dict)
    labels: tuple[str, ...] | None = None
    example: Any = None  # the ``inputs`` of a /predict request (the runtime's warm-up)
    files: dict[str, Path] = field(default_factory=dict)  # copied beside the model
    samples: list[Feeds] | None = None  # gate inputs; None = the example and more draws like it
    given: Given = field(default_factory=Given)  # --example / --shape / --dim
    comparable: Comparable = comparable_outputs
    reference: np.ndarray | Rows | None = None  # gate reference rows; None = the fp32 model's
    classifier: bool = False  # gate top-1 agreement too
    max_abs_error: float | None = None  # the gate's, when the command line sets none
    # the gate's mean / min cosine where the command line keeps the defaults (an example that
    # promises more than 0.99 / 0.98: minilm)
    cosine: tuple[float, float] | None = None
    quantize: QuantizeSettings | None = None  # the default when the command line is silent
    # The default when the command line names no method: ``auto`` over these candidates for
    # the objective (variants known to fit the architecture; ``--quantize auto`` tries the
    # whole menu).
    auto_tries: dict[str, tuple[QuantizeSettings, ...]] = field(default_factory=dict)
    num_heads: int = 0  # transformer fusions: attention heads and hidden size (0 = detect)
    hidden_size: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildOptions:
    optimize: bool = True
    level: str = "extended"
    ort_format: bool = False
    fuse: str = "auto"  # auto | bert | none
    quantize: str | None = None  # a quant_methods.METHODS name, "auto", "none"; None: the spec's
    objective: str = "latency"  # auto: latency | size
    budget_s: float = 600.0  # auto: no try starts after this many seconds
    quantize_ops: tuple[str, ...] | None = None
    max_fp32_nodes: int | None = None
    algo: str | None = None  # int4: rtn | hqq | gptq (None: the settings' default)
    block_size: int | None = None
    symmetric: bool | None = None
    reduce_range: bool | None = None  # 7-bit int8 weights (None: the settings', on)
    smooth: float | None = None  # SmoothQuant's alpha (0: off; None: the settings')
    calibration: tuple[Feeds, ...] = ()  # --calibration FILE: more feeds to calibrate on
    thresholds: Thresholds = field(default_factory=Thresholds)
