"""layers/build_layer.py (a standalone script, not a package) loaded as a module for the tests."""

from __future__ import annotations

from tests.support.cfn import ROOT
from tests.support.scripts import load

build_layer = load(ROOT / "layers" / "build_layer.py")
