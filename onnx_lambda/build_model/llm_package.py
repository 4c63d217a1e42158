"""A decoder artifact's model file: one copy of the weights, and never slower than its source.

``stage``: the model staged as ``model.onnx`` with its external data (an export's
``model.onnx.data``) read in, inline below 2 GiB, else beside it as ``model.onnx.data``.

``keep_faster``: the offline-optimized file against the staged one, by a short greedy decode of
each, interleaved (``ROUNDS`` rounds, the median step of each): the faster stays, the other is
deleted, so the folder that ships holds the weights once. An optimized file that wins keeps
its manifest's ``portable`` name for a file no longer shipped: under another onnxruntime the
handler says to rebuild (``handler.artifact``) instead of loading a second copy.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx

from onnx_lambda.build_model.package import PORTABLE

ROUNDS = 3
INLINE_LIMIT = 2**31 - 2**26  # protobuf's 2 GiB, with room for the graph itself


def stage(current: Path, staging: Path) -> None:
    """``current`` (and its external data) as ``staging / PORTABLE``."""
    model = onnx.load(str(current))  # external data read in from beside ``current``
    target = staging / PORTABLE
    if model.ByteSize() < INLINE_LIMIT:
        onnx.save(model, str(target))
    else:
        onnx.save(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=f"{PORTABLE}.data")


def keep_faster(staging: Path, chosen: str, timer: Callable[[Path], Callable[[], float]],
                note: Callable[[str], None]) -> str:
    """``chosen`` (the optimized file) or ``PORTABLE``, whichever decodes faster; the other is
    removed from ``staging``. ``timer(path)``: a session on ``path`` and the function that times
    one short decode on it (milliseconds a token)."""
    if chosen == PORTABLE:
        return chosen
    timers = {name: timer(staging / name) for name in (PORTABLE, chosen)}
    times: dict[str, list[float]] = {PORTABLE: [], chosen: []}
    for _ in range(ROUNDS):
        for name, run in timers.items():
            times[name].append(run())
    del timers  # (the sessions: their files are deleted next)
    portable, optimized = (sorted(times[n])[ROUNDS // 2] for n in (PORTABLE, chosen))
    keep, drop = (chosen, PORTABLE) if optimized < portable else (PORTABLE, chosen)
    for path in staging.iterdir():
        if path.name == drop or path.name == f"{drop}.data":
            path.unlink()
    note(f"kept {keep}: {min(optimized, portable):.2f} ms a token against "
         f"{max(optimized, portable):.2f} ms for {drop} (median of {ROUNDS} interleaved "
         "decodes); one copy of the weights ships")
    return keep
