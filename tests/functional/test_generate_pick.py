"""The in-ORT greedy choice: the hand-written two-node graph is valid ONNX and picks what numpy's
argmax picks on the last position (the first of equal maxima), on an OrtValue made over our
own memory."""

from __future__ import annotations

import numpy as np
import onnx

from handler.generation.pick import ArgMax, argmax_model


def test_the_graph_is_valid_onnx() -> None:
    onnx.checker.check_model(onnx.load_from_string(argmax_model()), full_check=True)


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
