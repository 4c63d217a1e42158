"""layers/build_layer.py (a standalone script, not a package) loaded as a module for the tests."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.support.cfn import ROOT


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_layer",
                                                  ROOT / "layers" / "build_layer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_layer = _load()
