"""Activation-aware weight quantization (AWQ, Lin et al. 2023) for ``int4 --algo awq``.

Weight-only int4 rounds every weight of a block to one of 16 levels, so the weights that meet
large activations (a few salient input channels) cost the most output error. AWQ scales those
weight rows up before rounding and the activation down by the same factor, exact in fp32: for
a product X·W and input channel j, ``s_j = mean|X_j|^alpha`` (normalised so that
``max(s)·min(s) = 1``), W' = diag(s)·W, X' = X / s. Unlike SmoothQuant's fixed alpha
(``--smooth``), alpha is searched per input tensor over a grid, each candidate scored by the
output error ``||X·(Q(diag(s)·W) / s) − X·W||²`` on the calibration activations, with Q the
same round-to-nearest block quantizer the method then applies (``quantize``, which mirrors
onnxruntime's ``MatMulNBits`` RTN blocks along K); alpha 0 (no scaling, plain RTN) is on the
grid, so on its calibration data AWQ is never worse than RTN. The scaled graph is written
through ``smooth.rescale`` (1/s folded into a layer norm or an Attention's V where exact, else
a ``Mul``); onnxruntime's RTN then quantizes it. The clipping search of the AWQ paper is not
done: its scale search is most of the gain it reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_lambda.build_model import smooth

if TYPE_CHECKING:
    from onnx_lambda.build_model.gate import Feeds

GRID = tuple(i / 20 for i in range(20))  # alpha 0, 0.05, ..., 0.95, as the AWQ paper's search
BITS = 4


@dataclass
class Awq:
    """What ``scale`` did, for the manifest's quantization report."""

    nodes: int  # products whose weight rows were scaled
    mul_nodes: int
    folded: dict[str, int]
    alphas: list[float]  # the alpha chosen for each input tensor, in graph order
    error_ratio: float  # the chosen scales' calibration error ÷ plain RTN's (≤ 1)
    calibration_samples: int

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "mul_nodes": self.mul_nodes, "folded": self.folded,
                "alphas": self.alphas, "error_ratio": round(self.error_ratio, 4),
                "calibration_samples": self.calibration_samples}


def scale(source: Path, target: Path, names: Sequence[str], calibration: Sequence[Feeds],
          block_size: int, symmetric: bool) -> Awq:
    """Write ``source`` into ``target`` with AWQ's searched scales on the MatMuls ``names``."""
    alphas: list[float] = []
    errors: list[tuple[float, float]] = []  # (chosen, alpha 0) per input tensor

    def search(activations: smooth.Activations, arrays: list[np.ndarray]) -> np.ndarray:
        x = activations.rows.astype(np.float64)
        exact = [x @ w for w in arrays]
        live = activations.means > smooth._TINY
        best: tuple[float, float, np.ndarray] | None = None
        plain = 0.0
        for alpha in GRID:
            s = np.ones_like(activations.means)
            s[live] = activations.means[live] ** alpha
            s /= np.sqrt(s.max() * s.min())
            error = sum(float(np.square(x @ (quantize(w * s[:, None], block_size, symmetric)
                                             / s[:, None]) - want).sum())
                        for w, want in zip(arrays, exact, strict=True))
            plain = error if alpha == 0 else plain
            if best is None or error < best[0]:
                best = (error, alpha, s)
        assert best is not None
        alphas.append(best[1])
        errors.append((best[0], plain))
        return best[2]

    done = smooth.rescale(source, target, names, calibration, search)
    chosen, plain = (sum(e[i] for e in errors) for i in (0, 1))
    return Awq(done.nodes, done.mul_nodes, done.folded, alphas,
               chosen / plain if plain else 1.0, len(calibration))


def quantize(weight: np.ndarray, block_size: int, symmetric: bool) -> np.ndarray:
    """``weight`` [K, N] through 4-bit round-to-nearest blocks of ``block_size`` along K, back
    to floats: what onnxruntime's ``MatMulNBits`` RTN quantizer stores (per block and column:
    asymmetric over [min(w, 0), max(w, 0)] with a zero point in 0..15; symmetric with the
    largest-magnitude value mapped to -8)."""
    rows, columns = weight.shape
    padded = -(-rows // block_size) * block_size
    w = np.zeros((padded, columns), np.float64)
    w[:rows] = weight
    blocks = w.reshape(-1, block_size, columns)
    levels = (1 << BITS) - 1
    if symmetric:
        index = np.abs(blocks).argmax(axis=1)
        peak = np.take_along_axis(blocks, index[:, None, :], axis=1)[:, 0, :]
        step = peak / -(1 << (BITS - 1))
        step[step == 0] = 1.0
        zero = np.full_like(step, 1 << (BITS - 1))
    else:
        low = np.minimum(blocks.min(axis=1), 0.0)
        high = np.maximum(blocks.max(axis=1), 0.0)
        step = (high - low) / levels
        step[step == 0] = 1.0
        zero = np.clip(np.round(-low / step), 0, levels)
    codes = np.clip(np.round(blocks / step[:, None, :]) + zero[:, None, :], 0, levels)
    return ((codes - zero[:, None, :]) * step[:, None, :]).reshape(padded, columns)[:rows]
