"""The artifact's last step, shared by every build (``builder``, ``decoder_build``): the file
the handler loads beside the portable model, and the manifest of what was staged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnxruntime as ort

from handler.manifest import Manifest
from onnx_lambda.build_model import optimize, output

if TYPE_CHECKING:
    from onnx_lambda.build_model.spec import BuildOptions

PORTABLE = "model.onnx"  # every artifact ships it: the fallback for another onnxruntime


def loaded_file(staging: Path, options: BuildOptions, note: Callable[[str], None]) -> str:
    """The staged ``PORTABLE`` model, or its offline-optimized copy when the build optimizes
    (``model.ort`` or ``model.opt.onnx``): the name the manifest's ``model`` gives."""
    if not options.optimize:
        return PORTABLE
    chosen = "model.ort" if options.ort_format else "model.opt.onnx"
    optimize.optimize_offline(staging / PORTABLE, staging / chosen, options.level)
    note(f"{chosen}: onnxruntime {ort.__version__}, level {options.level}")
    return chosen


def manifest(staging: Path, name: str, chosen: str, options: BuildOptions,
             **fields: Any) -> Manifest:
    """The manifest of the staged artifact: its files' sha256 (every file staged by now), the
    onnxruntime version and level it was optimized for, and the build's own ``fields``."""
    return Manifest(name=name, model=chosen, portable=PORTABLE, onnxruntime=ort.__version__,
                    optimization=options.level if options.optimize else "none",
                    files={p.name: output.sha256(p) for p in sorted(staging.iterdir())},
                    **fields)
