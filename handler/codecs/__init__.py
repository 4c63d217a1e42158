"""Wire formats, one module per family: ``simple`` JSON, Open Inference Protocol ``v2`` (JSON
and binary-tensor extension), raw ``npy``; ``shapes`` bounds the shapes a request declares."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

LAZY = ("npy", "v2")


def __getattr__(name: str) -> ModuleType:
    """``handler.codecs.npy`` / ``.v2`` on first use (PEP 562): a start that answers JSON on
    /predict skips their ~2.5 M instructions (with ``shapes``); once imported, each is a plain
    attribute of this package and this is not called again."""
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return __import__(f"{__name__}.{name}", fromlist=("_",))
