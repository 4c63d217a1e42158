"""The accuracy gate: compare a candidate's outputs with a reference on the sample inputs.

What is compared (``Comparable``: raw outputs → named rows, one row per sample item): by default
every output that can be — float tensors as vectors (cosine per row, mean and minimum; max abs
error), integer / bool / string tensors as labels (exact agreement), sequences of maps (what
skl2onnx's ZipMap writes) as vectors of their values in key order. Other values (nested
sequences, optionals) are skipped, and ``Accuracy.compared`` says what was compared. An example
can give its own rows (pooled embeddings, class scores) as a plain array. Classifiers also get
top-1 agreement on the first float rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from handler.errors import InferenceError

Feeds = dict[str, np.ndarray]
# name → rows (float rows are vectors, any other dtype labels), or a list of them, one per
# sample, for an output whose size varies from sample to sample
Rows = dict[str, "np.ndarray | list[np.ndarray]"]
# (raw session outputs by name, the feeds that produced them) → rows (or one array of rows)
Comparable = Callable[[dict[str, Any], Feeds], "np.ndarray | Rows"]


@dataclass(frozen=True)
class Thresholds:
    mean_cosine: float = 0.99
    min_cosine: float = 0.98
    top1: float = 0.99  # top-1 of classifiers, and every label output's agreement
    max_abs_error: float | None = None  # reported always, gated only when set
    token_agreement: float = 0.90  # decoders: greedy token agreement (decoder_build says why)
    # an item alone vs inside a mixed batch: float rounding passes, a per-tensor activation
    # scale shared across the batch (dynamic INT8: cosine ~0.993-0.995) does not
    batch_invariance: float = 0.99999


@dataclass(frozen=True)
class Accuracy:
    mean_cosine: float | None  # None: no float output compared
    min_cosine: float | None
    max_abs_error: float | None
    top1: float | None  # only for classifiers
    samples: int
    agreement: float | None = None  # the worst label output's exact agreement
    compared: tuple[str, ...] = ()  # "name (cosine)" / "name (agreement)"
    judged_on: str = ""  # which samples (``Split.describe``): held out, synthetic

    def on(self, judged_on: str) -> Accuracy:
        return replace(self, judged_on=judged_on)

    def failures(self, limits: Thresholds) -> list[str]:
        checks = [
            (self.mean_cosine is None or self.mean_cosine >= limits.mean_cosine,
             f"mean cosine {self.mean_cosine or 0:.4f} < {limits.mean_cosine}"),
            (self.min_cosine is None or self.min_cosine >= limits.min_cosine,
             f"min cosine {self.min_cosine or 0:.4f} < {limits.min_cosine}"),
            (self.top1 is None or self.top1 >= limits.top1,
             f"top-1 agreement {self.top1} < {limits.top1}"),
            (self.agreement is None or self.agreement >= limits.top1,
             f"label agreement {self.agreement} < {limits.top1}"),
            (limits.max_abs_error is None or self.max_abs_error is None
             or self.max_abs_error <= limits.max_abs_error,
             f"max abs error {self.max_abs_error or 0:.3g} > {limits.max_abs_error}"),
        ]
        return [message for ok, message in checks if not ok]

    def score(self) -> tuple[float, float, float]:
        """Worse first when sorted: min cosine, mean cosine, label agreement."""
        return (1.0 if self.min_cosine is None else self.min_cosine,
                1.0 if self.mean_cosine is None else self.mean_cosine,
                1.0 if self.agreement is None else self.agreement)

    def describe(self) -> str:
        if not self.compared:
            return "nothing comparable (no numeric, label or map output)"
        parts = []
        if self.mean_cosine is not None:
            parts.append(f"cosine mean {self.mean_cosine:.4f} / min {self.min_cosine:.4f}, "
                         f"max abs error {self.max_abs_error:.3g}")
        if self.top1 is not None:
            parts.append(f"top-1 {self.top1:.2%}")
        if self.agreement is not None:
            parts.append(f"label agreement {self.agreement:.2%}")
        where = f"{self.judged_on}; " if self.judged_on else f"{self.samples} samples; "
        return f"{', '.join(parts)} ({where}{', '.join(self.compared)})"

    def to_dict(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 6)

        return {"mean_cosine": rounded(self.mean_cosine), "min_cosine": rounded(self.min_cosine),
                "max_abs_error": None if self.max_abs_error is None
                else float(f"{self.max_abs_error:.6g}"),
                "top1": self.top1, "agreement": self.agreement, "samples": self.samples,
                "compared": list(self.compared),
                **({"judged_on": self.judged_on} if self.judged_on else {})}


def comparable_outputs(outputs: dict[str, Any], feeds: Feeds) -> Rows:
    """Default ``Comparable``: every output that can be compared (see the module docstring)."""
    rows: Rows = {}
    for name, value in outputs.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            keys = sorted(value[0], key=str)
            value = np.array([[float(item[k]) for k in keys] for item in value])
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            value = np.concatenate([v.ravel() for v in value])
        if not isinstance(value, np.ndarray) or value.size == 0 or value.dtype.kind not in \
                "fiubUSO":
            continue
        rows[name] = value.reshape(value.shape[0] if value.ndim >= 2 else 1, -1)
        if value.dtype.kind in "USO":
            rows[name] = rows[name].astype(str)
    return rows


def collect(run: Callable[[Feeds], dict[str, Any]], samples: Sequence[Feeds],
            comparable: Comparable) -> Rows:
    """Run every sample batch and stack each comparable's rows; an output whose size varies
    from sample to sample (detections, say) stays a list, one entry per sample. ``run`` is
    onnxruntime's Python API or ``handler.model.Model.run`` (tensors viewed as numpy here)."""
    parts: dict[str, list[np.ndarray]] = {}
    for feeds in samples:
        rows = comparable(as_numpy(run(feeds)), feeds)
        for name, value in (rows if isinstance(rows, dict) else {"output": rows}).items():
            parts.setdefault(name, []).append(value)
    stacked: Rows = {}
    for name, values in parts.items():
        try:
            stacked[name] = np.concatenate(values, axis=0)
        except ValueError:  # rows of different widths
            stacked[name] = values
    return stacked


def as_numpy(outputs: dict[str, Any]) -> dict[str, Any]:
    """The handler's output tensors as numpy views (sequences and maps as they are)."""
    return {name: value.numpy() if hasattr(value, "numpy") else value
            for name, value in outputs.items()}


def compare(reference: Rows, candidate: Rows, *, classifier: bool) -> Accuracy:
    if set(reference) != set(candidate):
        raise ValueError(f"reference {sorted(reference)} and candidate {sorted(candidate)} "
                         "compare different outputs")
    cosines, errors, agreements, compared = [], [], [], []
    top1, samples = None, 0
    for name, ref in reference.items():
        pairs = _pairs(ref, candidate[name])
        samples = samples or len(ref)
        if pairs is None:  # the candidate changed an output's shape: nothing agrees
            agreements.append(0.0)
            compared.append(f"{name} (shape changed)")
            continue
        if pairs[0][0].dtype.kind != "f":
            agreements.append(float(np.mean(np.concatenate(
                [(r == c).ravel() for r, c in pairs]))))
            compared.append(f"{name} (agreement)")
            continue
        cosines += [_row_cosines(r.astype(np.float64), c.astype(np.float64)) for r, c in pairs]
        errors += [float(np.abs(r.astype(np.float64) - c).max()) for r, c in pairs if r.size]
        compared.append(f"{name} (cosine)")
        if classifier and top1 is None:
            top1 = float(np.mean(np.concatenate([r.argmax(axis=1) == c.argmax(axis=1)
                                                 for r, c in pairs])))
    every = np.concatenate(cosines) if cosines else None
    every = every if every is not None and every.size else None  # only empty rows
    return Accuracy(None if every is None else float(every.mean()),
                    None if every is None else float(every.min()),
                    max(errors) if errors else None, top1, samples,
                    min(agreements) if agreements else None, tuple(compared))


def _pairs(ref: np.ndarray | list[np.ndarray], cand: np.ndarray | list[np.ndarray]
           ) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Reference and candidate rows side by side (one pair, or one per sample for a
    variable-size output); None when their shapes differ anywhere."""
    refs = ref if isinstance(ref, list) else [ref]
    cands = cand if isinstance(cand, list) else [cand]
    if len(refs) != len(cands) or any(r.shape != c.shape for r, c in zip(refs, cands,
                                                                          strict=True)):
        return None
    return [(r.reshape(r.shape[0], -1 if r.size else 0), c.reshape(c.shape[0], -1 if c.size else 0))
            for r, c in zip(refs, cands, strict=True)]


def _row_cosines(ref: np.ndarray, cand: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(ref, axis=1) * np.linalg.norm(cand, axis=1)
    dots = (ref * cand).sum(axis=1)
    # Two zero vectors are identical; one zero vector against a non-zero one is orthogonal.
    both_zero = norms == 0
    same = np.abs(ref - cand).max(axis=1, initial=0.0) == 0
    return np.where(both_zero, np.where(same, 1.0, 0.0), dots / np.where(both_zero, 1.0, norms))


@dataclass(frozen=True)
class Split:
    """The samples that tune (calibrate SmoothQuant / static ranges / GPTQ / AWQ, rank the
    sensitive nodes, choose among ``auto``'s tries) apart from those that judge: the gate decides
    on ``judge``, which tuned nothing. Interleaved, so both halves cover every style of an
    example's ordered set. ``held_out`` is False with a single sample (nothing to split: judged on
    the sample that tuned, and said so)."""

    tune: list[Feeds]
    judge: list[Feeds]
    tune_index: tuple[int, ...]
    judge_index: tuple[int, ...]
    held_out: bool
    synthetic: bool

    def describe(self) -> str:
        kind = "synthetic " if self.synthetic else ""
        if not self.held_out:
            return f"{len(self.judge)} {kind}sample(s), the same that tuned: none held out"
        return f"{len(self.judge)} held-out {kind}sample(s), {len(self.tune)} others tuned"

    def to_dict(self) -> dict[str, Any]:
        return {"tune": len(self.tune), "judge": len(self.judge), "held_out": self.held_out,
                "synthetic": self.synthetic}


def split(samples: Sequence[Feeds], *, synthetic: bool = False) -> Split:
    """Every other sample judges (the 2nd, 4th, …), the rest tune."""
    if len(samples) < 2:
        every = tuple(range(len(samples)))
        return Split(list(samples), list(samples), every, every, False, synthetic)
    tune, judge = tuple(range(0, len(samples), 2)), tuple(range(1, len(samples), 2))
    return Split([samples[i] for i in tune], [samples[i] for i in judge], tune, judge, True,
                 synthetic)


def rows_of(samples: Sequence[Feeds], rows: np.ndarray | Rows, index: Sequence[int]
            ) -> np.ndarray | Rows:
    """The reference rows of the samples ``index`` picks (rows are stacked in sample order; a
    sample contributes its batch size in rows, a list output one entry)."""
    sizes = [_batch(feeds) for feeds in samples]
    starts = np.cumsum([0, *sizes])

    def pick(value: np.ndarray | list[np.ndarray]) -> np.ndarray | list[np.ndarray]:
        if isinstance(value, list):
            return [value[i] for i in index]
        if len(value) != starts[-1]:  # rows not one per batch item: whole batches only
            per = len(value) // max(1, len(samples))
            return np.concatenate([value[i * per:(i + 1) * per] for i in index])
        return np.concatenate([value[starts[i]:starts[i + 1]] for i in index])

    if isinstance(rows, dict):
        return {name: pick(value) for name, value in rows.items()}
    result = pick(rows)
    assert isinstance(result, np.ndarray)
    return result


def _batch(feeds: Feeds) -> int:
    first = next((v for v in feeds.values() if isinstance(v, np.ndarray) and v.ndim), None)
    return 1 if first is None else int(first.shape[0])


def mixed_batch(samples: Sequence[Feeds]) -> Feeds | None:
    """The samples as one batch: stacked along the batch axis where their shapes agree past it,
    right-padded (ids 0, ``attention_mask`` 0) for token inputs of different lengths; None when
    neither fits (a scalar input, other ranks)."""
    if len(samples) < 2 or any(set(s) != set(samples[0]) for s in samples):
        return None
    batch: Feeds = {}
    for name in samples[0]:
        arrays = [s[name] for s in samples]
        if any(a.ndim == 0 for a in arrays):
            return None
        if len({a.shape[1:] for a in arrays}) > 1:
            if "attention_mask" not in samples[0] or any(a.ndim != 2 for a in arrays):
                return None
            width = max(a.shape[1] for a in arrays)
            arrays = [np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in arrays]
        batch[name] = np.concatenate(arrays)
    return batch


@dataclass(frozen=True)
class Invariance:
    """Each item's answer alone vs inside one mixed batch: the lowest cosine (None: not
    measured, the samples make no batch or the answers keep the padded length)."""

    min_cosine: float | None
    items: int

    def fails(self, limits: Thresholds) -> bool:
        return self.min_cosine is not None and self.min_cosine < limits.batch_invariance

    def describe(self) -> str:
        if self.min_cosine is None:
            return ("batch invariance: not measured (the samples make no mixed batch the model "
                    "takes)")
        verdict = ("the same alone and batched" if self.min_cosine >= Thresholds.batch_invariance
                   else "an item's answer depends on its batch neighbours")
        return (f"batch invariance: min cosine {self.min_cosine:.6f} over {self.items} items "
                f"alone vs in one mixed batch ({verdict})")


def batch_invariance(run: Callable[[Feeds], dict[str, Any]], samples: Sequence[Feeds],
                     comparable: Comparable, most: int = 8) -> Invariance:
    """The first ``most`` samples each run alone and inside one mixed batch."""
    samples = list(samples[:most])
    batch = mixed_batch(samples)
    if batch is None:
        return Invariance(None, len(samples))
    alone = collect(run, samples, comparable)
    try:
        together = collect(run, [batch], comparable)
    except InferenceError:  # the model takes no batch of them (a fixed batch axis, a state input)
        return Invariance(None, len(samples))
    try:
        accuracy = compare(alone, together, classifier=False)
    except ValueError:
        return Invariance(None, len(samples))
    if any("shape changed" in c for c in accuracy.compared) or accuracy.min_cosine is None:
        return Invariance(None, len(samples))
    return Invariance(accuracy.min_cosine, len(samples))
