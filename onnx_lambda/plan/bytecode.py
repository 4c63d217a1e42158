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


def compile_shipped(module: str = "handler.app") -> None:
    """Write ``__pycache__`` for ``handler/`` (and its bundle) and for the checkout folder the
    child's ``module`` comes from (a lab baseline's, say); an interpreter reads them even under
    ``PYTHONDONTWRITEBYTECODE``."""
    _compile("handler")
    _compile(module.partition(".")[0])


@cache  # once per folder and process: compileall only rewrites what changed anyway
def _compile(top: str) -> None:
    folder = root() / top
    if folder.is_dir():
        compileall.compile_dir(str(folder), quiet=1)
    if top == "handler":
        bundle.write(str(folder))
