"""Cold processes read bytecode, as they do in the image.

The Dockerfile and the layer build run ``compileall`` over the handler, so Lambda never parses
its source. A benchmark child started where ``__pycache__`` is missing (a fresh clone, or
``PYTHONDONTWRITEBYTECODE`` set) would parse ~40 modules on every cold start instead (≈ 40 ms
here) and charge it to our imports; the C-API floor imports three of them. The image also
writes ``handler.bundle``'s one-file bytecode of our modules, which ``handler.app`` reads.
"""

from __future__ import annotations

import compileall
from functools import cache

from handler import bundle
from onnx_lambda.source_tree import root


@cache  # once per benchmark process: compileall only rewrites what changed anyway
def compile_shipped() -> None:
    """Write ``__pycache__`` for ``handler/`` and the benchmark's own children (baselines,
    ``rss``), and the handler's bundle; an interpreter reads them even under
    ``PYTHONDONTWRITEBYTECODE``."""
    for folder in (root() / "handler", root() / "onnx_lambda" / "bench"):
        compileall.compile_dir(str(folder), quiet=1)
    bundle.write(str(root() / "handler"))
