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
grid. Then, as the paper does, each block's range is clipped (shrunk to 1, 0.95, ..., 0.5 of its
min/max, per block and column) where that rounds the scaled product better on the calibration
rows: the weight is clipped, so the quantizer's own min/max is the shrunk range. The scaled
graph is written through ``smooth.rescale`` (1/s folded into a layer norm or an Attention's V
where exact, else a ``Mul``); onnxruntime's RTN then quantizes it.
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
CLIPS = tuple(1 - i / 20 for i in range(11))  # range shrinks 1, 0.95, ..., 0.5, as the paper's
CLIP_ROWS = 256  # activation rows the clipping search scores on (it keeps [rows, blocks, N])
BITS = 4


@dataclass
class Awq:
    """What ``scale`` did, for the manifest's quantization report."""

    nodes: int  # products whose weight rows were scaled
    mul_nodes: int
    folded: dict[str, int]
    alphas: list[float]  # the alpha chosen for each input tensor, in graph order
    error_ratio: float  # the output error with the chosen scales and clipping ÷ plain RTN's
    clipped: float  # share of (block, column) ranges the clipping search shrank
    calibration_samples: int

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "mul_nodes": self.mul_nodes, "folded": self.folded,
                "alphas": self.alphas, "error_ratio": round(self.error_ratio, 4),
                "clipped": round(self.clipped, 4),
                "calibration_samples": self.calibration_samples}


def scale(source: Path, target: Path, names: Sequence[str], calibration: Sequence[Feeds],
          block_size: int, symmetric: bool) -> Awq:
    """Write ``source`` into ``target`` with AWQ's searched scales and clipping on the MatMuls
    ``names``."""
    alphas: list[float] = []
    plain: list[float] = []  # each weight's output error under plain RTN
    final: list[float] = []  # and with the chosen scale and clipping
    clipped: list[float] = []  # each weight's share of (block, column) ranges clipped

    def search(activations: smooth.Activations, arrays: list[np.ndarray]) -> np.ndarray:
        x = activations.rows.astype(np.float64)
        exact = [x @ w for w in arrays]
        live = activations.means > smooth._TINY
        best: tuple[float, float, np.ndarray] | None = None
        for alpha in GRID:
            s = np.ones_like(activations.means)
            s[live] = activations.means[live] ** alpha
            s /= np.sqrt(s.max() * s.min())
            errors = [_error(x, quantize(w * s[:, None], block_size, symmetric) / s[:, None],
                             want) for w, want in zip(arrays, exact, strict=True)]
            if alpha == 0:
                plain.extend(errors)
            if best is None or sum(errors) < best[0]:
                best = (sum(errors), alpha, s)
        assert best is not None
        alphas.append(best[1])
        return best[2]

    def clip(weight: np.ndarray, activations: smooth.Activations, s: np.ndarray) -> np.ndarray:
        x = activations.rows.astype(np.float64)
        chosen, share = clip_ranges(weight, x[:CLIP_ROWS] / s, block_size, symmetric)
        clipped.append(share)
        final.append(_error(x, quantize(chosen, block_size, symmetric) / s[:, None],
                            x @ (weight / s[:, None])))
        return chosen

    done = smooth.rescale(source, target, names, calibration, search, clip)
    return Awq(done.nodes, done.mul_nodes, done.folded, alphas,
               sum(final) / sum(plain) if sum(plain) else 1.0,
               float(np.mean(clipped)) if clipped else 0.0, len(calibration))


def clip_ranges(weight: np.ndarray, x: np.ndarray, block_size: int, symmetric: bool
                ) -> tuple[np.ndarray, float]:
    """AWQ's clipping search: for every block and column of ``weight`` [K, N], the range
    shrink in ``CLIPS`` whose rounding costs ``x``·W the least (``x``: activation rows [R, K]),
    the weight clipped to it (so the quantizer's min/max is the shrunk range), and the share of
    (block, column) ranges that shrank."""
    blocks = _blocks(weight, block_size)
    xb = _blocks(x.T, block_size).transpose(2, 0, 1)  # [R, blocks, block_size]
    low, high = _range(blocks)
    if symmetric:
        high = np.maximum(-low, high)
        low = -high
    best_error = np.full(low.shape, np.inf)
    best = blocks
    for ratio in CLIPS:
        candidate = np.clip(blocks, low[:, None, :] * ratio, high[:, None, :] * ratio)
        difference = _round(candidate, symmetric) - blocks
        error = np.square(np.einsum("rkb,kbn->rkn", xb, difference)).sum(axis=0)
        better = error < best_error
        best_error = np.where(better, error, best_error)
        best = np.where(better[:, None, :], candidate, best)
    shrunk = float(np.mean(np.any(best != blocks, axis=1)))
    return best.reshape(-1, weight.shape[1])[:weight.shape[0]], shrunk


def _error(x: np.ndarray, effective: np.ndarray, exact: np.ndarray) -> float:
    return float(np.square(x @ effective - exact).sum())


def quantize(weight: np.ndarray, block_size: int, symmetric: bool) -> np.ndarray:
    """``weight`` [K, N] through 4-bit round-to-nearest blocks of ``block_size`` along K, back
    to floats: what onnxruntime's ``MatMulNBits`` RTN quantizer stores (per block and column:
    asymmetric over [min(w, 0), max(w, 0)] with a zero point in 0..15; symmetric with the
    largest-magnitude value mapped to -8)."""
    rounded = _round(_blocks(weight, block_size), symmetric)
    return rounded.reshape(-1, weight.shape[1])[:weight.shape[0]]


def _blocks(weight: np.ndarray, block_size: int) -> np.ndarray:
    """[K, N] → [blocks, block_size, N] in float64, K zero-padded to whole blocks (as
    ``MatMulNBits`` pads it)."""
    rows, columns = weight.shape
    padded = np.zeros((-(-rows // block_size) * block_size, columns))
    padded[:rows] = weight
    return padded.reshape(-1, block_size, columns)


def _range(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block's and column's [min(w, 0), max(w, 0)]: the asymmetric quantizer's range."""
    return np.minimum(blocks.min(axis=1), 0.0), np.maximum(blocks.max(axis=1), 0.0)


def _round(blocks: np.ndarray, symmetric: bool) -> np.ndarray:
    """``_blocks``' output through the 4-bit quantizer and back (``quantize``)."""
    levels = (1 << BITS) - 1
    if symmetric:
        index = np.abs(blocks).argmax(axis=1)
        peak = np.take_along_axis(blocks, index[:, None, :], axis=1)[:, 0, :]
        step = peak / -(1 << (BITS - 1))
        step[step == 0] = 1.0
        zero = np.full_like(step, 1 << (BITS - 1))
    else:
        low, high = _range(blocks)
        step = (high - low) / levels
        step[step == 0] = 1.0
        zero = np.clip(np.round(-low / step), 0, levels)
    codes = np.clip(np.round(blocks / step[:, None, :]) + zero[:, None, :], 0, levels)
    return (codes - zero[:, None, :]) * step[:, None, :]
