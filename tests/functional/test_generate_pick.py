"""The in-ORT token choice: the hand-written graphs are valid ONNX; the greedy one picks what
numpy's argmax picks on the last position (the first of equal maxima), the sampling ones draw
what the inverse CDF of the warped distribution gives at the same uniform number (float64
reference), on OrtValues made over our own memory."""

from __future__ import annotations

import numpy as np
import onnx

from handler.generation.pick import ArgMax, Sample, argmax_model, sample_model


def test_the_graphs_are_valid_onnx() -> None:
    for model in (argmax_model(), sample_model(False), sample_model(True)):
        onnx.checker.check_model(onnx.load_from_string(model), full_check=True)


def test_it_picks_the_last_positions_first_maximum() -> None:
    picker = ArgMax()
    try:
        rng = np.random.default_rng(0)
        for sequence, vocab in ((1, 7), (5, 32000), (3, 50257)):
            logits = np.ascontiguousarray(rng.standard_normal((1, sequence, vocab),
                                                              dtype=np.float32))
            logits[0, -1, [3, 5]] = 100.0  # a tie: the first index wins
            value = picker.runner.tensor(logits.ctypes.data, logits.shape, "float32")
            try:
                assert picker.choose(value) == 3 == int(logits[0, -1].argmax())
            finally:
                picker.runner.release(value)
    finally:
        picker.close()


def reference(row: np.ndarray, temperature: float, top_k: int, top_p: float, u: float,
              nucleus: bool) -> int:
    """The inverse-CDF draw at ``u``: over the row in vocabulary order, or (nucleus) over the
    ``top_k`` largest, most likely first, cut where the mass before a token reaches top_p."""
    scaled = row.astype(np.float64) / temperature
    order = (np.argsort(-scaled, kind="stable")[:top_k] if nucleus
             else np.arange(len(row)))
    probs = np.exp(scaled[order] - scaled[order].max())
    probs /= probs.sum()
    kept = np.where(np.cumsum(probs) - probs < top_p, probs, 0.0) if nucleus else probs
    mass = np.cumsum(kept)
    return int(order[int((mass < u * mass[-1]).sum())])


def test_draws_follow_the_inverse_cdf_of_the_warped_distribution() -> None:
    sample = Sample()
    try:
        rng = np.random.default_rng(1)
        logits = np.ascontiguousarray(rng.standard_normal((1, 2, 300), dtype=np.float32) * 3)
        value = sample.draw.tensor(logits.ctypes.data, logits.shape, "float32")
        try:
            for temperature, top_k, top_p in ((1.0, 0, 1.0), (0.7, 0, 1.0), (1.0, 20, 1.0),
                                              (1.3, 0, 0.5), (0.9, 40, 0.8)):
                nucleus = top_k > 0 or top_p < 1.0
                for u in np.linspace(0.003, 0.997, 40):
                    want = reference(logits[0, -1], temperature, top_k or 300, top_p, u, nucleus)
                    assert sample.choose(value, temperature, top_k, top_p, float(u), 300) == want
        finally:
            sample.draw.release(value)
    finally:
        sample.close()
