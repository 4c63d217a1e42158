"""A decoder artifact's model file: one copy of the weights, and never slower than its source.

``stage``: the model staged as ``model.onnx`` with its weights beside it in ``model.onnx.data``,
never inline: onnxruntime maps external data and lets each packed weight's pages go, where an
inline model's whole protobuf is read into memory first. SmolLM2 staged inline kept 806 MiB
resident after load (peak 881) against 556 (peak 583) with its weights mapped.

``keep_faster``: the offline-optimized file against the staged one, by a short greedy decode of
each, interleaved (``ROUNDS`` rounds in each load order, the median step of each): the faster
stays, the other is deleted, so the folder that ships holds the weights once. An optimized file
that wins keeps its manifest's ``portable`` name for a file no longer shipped: under another
onnxruntime the handler says to rebuild (``handler.artifact``) instead of loading a second copy.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx

from onnx_lambda.build_model.package import PORTABLE

ROUNDS = 3


def stage(current: Path, staging: Path) -> None:
    """``current`` (and its external data) as ``staging / PORTABLE`` + ``PORTABLE.data``."""
    save(onnx.load(str(current)), staging / PORTABLE)  # (its external data read in)


def save(model: onnx.ModelProto, target: Path) -> None:
    """``model`` with its weights beside it in ``target`` + ``.data`` (no protobuf 2 GiB limit,
    and what onnxruntime maps at load)."""
    onnx.save(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
              location=f"{target.name}.data", size_threshold=1024)


def keep_faster(staging: Path, chosen: str, timer: Callable[[Path], Callable[[], float]],
                note: Callable[[str], None]) -> str:
    """``chosen`` (the optimized file) or ``PORTABLE``, whichever decodes faster; the other is
    removed from ``staging``. ``timer(path)``: a session on ``path`` and the function that times
    one short decode on it (milliseconds a token)."""
    if chosen == PORTABLE:
        return chosen
    times: dict[str, list[float]] = {PORTABLE: [], chosen: []}
    # Two passes, each loading the files in the other order: in one process the session loaded
    # second decoded 15-20 % faster on SmolLM2, whichever file it was (benchmarks.target_worker)
    for order in ((PORTABLE, chosen), (chosen, PORTABLE)):
        timers = {name: timer(staging / name) for name in order}
        for _ in range(ROUNDS):
            for name, run in timers.items():
                times[name].append(run())
        del timers  # (the sessions: their files are deleted next)
    portable, optimized = (sorted(times[n])[ROUNDS] for n in (PORTABLE, chosen))
    keep, drop = (chosen, PORTABLE) if optimized < portable else (PORTABLE, chosen)
    for path in staging.iterdir():
        if path.name == drop or path.name == f"{drop}.data":
            path.unlink()
    note(f"kept {keep}: {min(optimized, portable):.2f} ms a token against "
         f"{max(optimized, portable):.2f} ms for {drop} (median of {2 * ROUNDS} interleaved "
         "decodes, both load orders); one copy of the weights ships")
    return keep
