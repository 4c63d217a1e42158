"""The accuracy gate: compare a candidate's outputs with a reference on the sample inputs.

Outputs are compared as vectors, one per sample (``Comparable``: what a pipeline would return,
e.g. pooled sentence embeddings or class scores). Figures: cosine similarity per sample (mean and
minimum), maximum absolute error, and, for classifiers, top-1 agreement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Feeds = dict[str, np.ndarray]
# (raw session outputs by name, the feeds that produced them) → one row per sample
Comparable = Callable[[dict[str, np.ndarray], Feeds], np.ndarray]


@dataclass(frozen=True)
class Thresholds:
    mean_cosine: float = 0.99
    min_cosine: float = 0.98
    top1: float = 0.99  # only for classifiers
    max_abs_error: float | None = None  # reported always, gated only when set


@dataclass(frozen=True)
class Accuracy:
    mean_cosine: float
    min_cosine: float
    max_abs_error: float
    top1: float | None
    samples: int

    def failures(self, limits: Thresholds) -> list[str]:
        checks = [
            (self.mean_cosine >= limits.mean_cosine,
             f"mean cosine {self.mean_cosine:.4f} < {limits.mean_cosine}"),
            (self.min_cosine >= limits.min_cosine,
             f"min cosine {self.min_cosine:.4f} < {limits.min_cosine}"),
            (self.top1 is None or self.top1 >= limits.top1,
             f"top-1 agreement {self.top1} < {limits.top1}"),
            (limits.max_abs_error is None or self.max_abs_error <= limits.max_abs_error,
             f"max abs error {self.max_abs_error:.3g} > {limits.max_abs_error}"),
        ]
        return [message for ok, message in checks if not ok]

    def describe(self) -> str:
        top1 = f", top-1 {self.top1:.2%}" if self.top1 is not None else ""
        return (f"cosine mean {self.mean_cosine:.4f} / min {self.min_cosine:.4f}, "
                f"max abs error {self.max_abs_error:.3g}{top1} ({self.samples} samples)")

    def to_dict(self) -> dict[str, float | int | None]:
        return {"mean_cosine": round(self.mean_cosine, 6), "min_cosine": round(self.min_cosine, 6),
                "max_abs_error": float(f"{self.max_abs_error:.6g}"), "top1": self.top1,
                "samples": self.samples}


def first_output(outputs: dict[str, np.ndarray], feeds: Feeds) -> np.ndarray:
    """Default ``Comparable``: the first numeric output, one flattened row per batch item."""
    for value in outputs.values():
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
            return value.reshape(value.shape[0] if value.ndim else 1, -1).astype(np.float64)
    raise ValueError("the model has no numeric tensor output to compare")


def collect(run: Callable[[Feeds], dict[str, np.ndarray]], samples: Sequence[Feeds],
            comparable: Comparable) -> np.ndarray:
    """Run every sample batch and stack the comparable rows (``run``: onnxruntime's Python API,
    or ``handler.model.Model.run``, whose tensors are viewed as numpy arrays here)."""
    return np.concatenate([comparable(as_numpy(run(feeds)), feeds) for feeds in samples],
                          axis=0)


def as_numpy(outputs: dict[str, Any]) -> dict[str, Any]:
    """The handler's output tensors as numpy views (sequences and maps as they are)."""
    return {name: value.numpy() if hasattr(value, "numpy") else value
            for name, value in outputs.items()}


def compare(reference: np.ndarray, candidate: np.ndarray, *, classifier: bool) -> Accuracy:
    if reference.shape != candidate.shape:
        raise ValueError(f"reference {reference.shape} and candidate {candidate.shape} differ")
    ref = reference.astype(np.float64)
    cand = candidate.astype(np.float64)
    norms = np.linalg.norm(ref, axis=1) * np.linalg.norm(cand, axis=1)
    dots = (ref * cand).sum(axis=1)
    # Two zero vectors are identical; one zero vector against a non-zero one is orthogonal.
    both_zero = norms == 0
    cosine = np.where(both_zero, np.where(np.abs(ref - cand).max(axis=1) == 0, 1.0, 0.0),
                      dots / np.where(both_zero, 1.0, norms))
    top1 = float(np.mean(ref.argmax(axis=1) == cand.argmax(axis=1))) if classifier else None
    return Accuracy(float(cosine.mean()), float(cosine.min()), float(np.abs(ref - cand).max()),
                    top1, len(ref))
