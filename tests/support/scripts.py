"""Standalone scripts of the repository (not packages: layers/build_layer.py, events/generate.py)
loaded as modules for the tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
